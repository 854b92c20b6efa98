#!/usr/bin/env bash
# Checks the objects of libsegmux_kernels.a built with wider instruction sets (src/kernels/cpu/*_avx2.cpp,
# *_avx512.cpp): every symbol they define with external or weak linkage must be in their own namespace
# segmux::cpu::<level>, and none may run code at start-up (static initialisers). Otherwise an inline or
# template function (say std::vector<float>::resize, or a helper from a shared header) compiled with
# AVX-512 could be the copy the linker keeps for baseline callers, and a CPU without AVX-512 would die
# with SIGILL outside the dispatcher's control. Usage: check_isa_objects.sh path/to/libsegmux_kernels.a
set -euo pipefail
lib=$(realpath "$1")
mapfile -t members < <(ar t "$lib" | grep -E '_(avx2|avx512)\.cpp\.o$' || true)
if [ ${#members[@]} -eq 0 ]; then
  echo "check_isa_objects: no *_avx2 / *_avx512 objects in $lib" >&2
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && ar x "$lib" "${members[@]}")
bad=0
for m in "${members[@]}"; do
  level=avx512
  [[ $m == *_avx2.cpp.o ]] && level=avx2
  # Global (upper-case type) and weak/unique (u v w) definitions must be segmux::cpu::<level>::...
  while read -r type sym; do
    name=$(printf '%s\n' "$sym" | c++filt)
    # (DW.ref.__gxx_personality_v0: a pointer to the C++ runtime's personality routine, data only.)
    if [[ $type =~ [A-Zuvw] && $name != segmux::cpu::$level::* && $name != DW.ref.__gxx_personality_v0 ]]; then
      echo "check_isa_objects: $m defines '$name' ($type) outside segmux::cpu::$level" >&2
      bad=1
    fi
    if [[ $sym == _GLOBAL__sub_I_* ]]; then
      echo "check_isa_objects: $m has a static initialiser ($sym): it would run on every CPU" >&2
      bad=1
    fi
  done < <(nm --defined-only "$tmp/$m" | awk 'NF == 3 {print $2, $3}')
  if objdump -h "$tmp/$m" | grep -qE '\.(init_array|ctors)'; then
    echo "check_isa_objects: $m has start-up code (.init_array)" >&2
    bad=1
  fi
done
if [ $bad -ne 0 ]; then exit 1; fi
echo "check_isa_objects: ${#members[@]} objects, all symbols in their level's namespace, no start-up code"
