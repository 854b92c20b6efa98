#!/usr/bin/env bash
# The layering rule, checked on every #include "..." under src/: a folder may include only itself and the
# layers below it (the same graph as CMakeLists.txt's libraries). Product code never includes verify/;
# only the build-time deploy/ layers (the model store and the package builder) meet the compiler (and the ONNX exporter); nothing below the apps includes the apps.
# Usage: scripts/check_layers.sh [SRC_DIR]   (exit 1 and one line per violation when the rule is broken)
set -euo pipefail
src=${1:-"$(dirname "$0")/../src"}

allowed() {  # the folders (first path component, or pipeline/<sub> and deploy/<sub>) that $1 may include
  case "$1" in
    core) echo "core" ;;
    io) echo "core io" ;;
    ir) echo "core ir" ;;
    kernels) echo "core ir kernels" ;;
    runtime) echo "core io ir kernels runtime" ;;
    onnx) echo "core io ir onnx" ;;
    compiler) echo "core io ir kernels runtime compiler" ;;
    models) echo "core io ir kernels runtime models" ;;
    engines) echo "core engines" ;;
    deploy/package) echo "core io ir kernels runtime onnx compiler models deploy/package" ;;
    deploy/model_store) echo "core io ir kernels runtime onnx compiler models engines pipeline deploy/package deploy/model_store" ;;
    pipeline/*) echo "core io ir kernels runtime models engines pipeline" ;;
    capi) echo "core io ir kernels runtime onnx compiler models engines pipeline deploy/package deploy/model_store capi" ;;
    verify) echo "core io ir kernels runtime onnx compiler models engines pipeline deploy/package deploy/model_store verify" ;;
    service) echo "core io ir kernels runtime models engines pipeline service" ;;
    apps) echo "core io ir kernels runtime onnx compiler models engines pipeline deploy/package deploy/model_store capi verify service apps" ;;
    *) echo "" ;;
  esac
}

layer_of() {  # src-relative path -> its layer name
  case "$1" in
    pipeline/*/* | deploy/*/*) echo "$(echo "$1" | cut -d/ -f1-2)" ;;
    */*) echo "${1%%/*}" ;;
    *) echo "" ;;
  esac
}

violations=0
while IFS= read -r file; do
  rel=${file#"$src"/}
  from=$(layer_of "$rel")
  ok=" $(allowed "$from") "
  if [ "$ok" = "  " ]; then
    echo "check_layers: $rel: folder '$from' is not in the layer table (scripts/check_layers.sh)"
    violations=$((violations + 1))
    continue
  fi
  while IFS= read -r inc; do
    to=$(layer_of "$inc")
    case "$to" in pipeline/*) to_any="pipeline" ;; esac
    if [[ "$ok" == *" $to "* ]] || { [ "${to_any:-}" = pipeline ] && [[ "$ok" == *" pipeline "* ]]; }; then
      unset to_any
      continue
    fi
    unset to_any
    echo "check_layers: $rel includes \"$inc\": layer '$from' may not use '$to'"
    violations=$((violations + 1))
  done < <(grep -hoE '^#include "[^"]+"' "$file" | sed -E 's/#include "(.*)"/\1/')
done < <(find "$src" -type f \( -name '*.cpp' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) | sort)

if [ "$violations" -gt 0 ]; then
  echo "check_layers: $violations include(s) break the layering"
  exit 1
fi
echo "check_layers: ok"
