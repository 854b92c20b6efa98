#!/usr/bin/env bash
# Fails when libsegmux.so exports anything but the C API (segmux_*): the static libraries linked into it
# must stay hidden (cmake/libsegmux.map). Also checks the SONAME is versioned.
# Usage: scripts/check_exports.sh path/to/libsegmux.so
set -euo pipefail
lib=${1:?usage: scripts/check_exports.sh LIBSEGMUX}
exported=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVWiu]$/ {print $3}' | sort -u)
bad=$(grep -v '^segmux_' <<<"$exported" || true)
if [ -n "$bad" ]; then
  echo "check_exports: $lib exports symbols outside the C API:"
  head -n 20 <<<"$bad"
  exit 1
fi
for f in segmux_version segmux_model_open segmux_session_open_video segmux_session_propagate segmux_frame_mask; do
  grep -qx "$f" <<<"$exported" || { echo "check_exports: $lib lacks $f"; exit 1; }
done
soname=$(objdump -p "$lib" | awk '$1 == "SONAME" {print $2}')
[[ "$soname" =~ ^libsegmux\.so\.[0-9]+ ]] || { echo "check_exports: SONAME '$soname' is not versioned"; exit 1; }
echo "check_exports: $(wc -l <<<"$exported") segmux_* functions, SONAME $soname"
