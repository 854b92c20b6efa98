#!/usr/bin/env bash
# The formatting check: every tracked C/C++/CUDA file as .clang-format says (clang-format --dry-run
# -Werror). Prints the drifting files and exits 1 when there are any.
# Usage: scripts/check_format.sh [--fix]   (--fix reformats the drifting files in place)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "check_format: clang-format is not installed (scripts/setup.sh)" >&2; exit 1; }
fix=0
[ "${1:-}" = --fix ] && fix=1

drifting=()
while IFS= read -r -d '' file; do
  [ -f "$file" ] || continue  # a deleted file still in the index
  clang-format --dry-run -Werror "$file" >/dev/null 2>&1 || drifting+=("$file")
done < <(git ls-files -z -- '*.c' '*.h' '*.cpp' '*.hpp' '*.cu' '*.cuh' ':!:third_party/**')

if [ "${#drifting[@]}" -eq 0 ]; then
  echo "check_format: ok"
  exit 0
fi
printf 'check_format: %s\n' "${drifting[@]}"
if [ "$fix" = 1 ]; then
  clang-format -i "${drifting[@]}"
  echo "check_format: reformatted ${#drifting[@]} file(s)"
  exit 0
fi
echo "check_format: ${#drifting[@]} file(s) drift from .clang-format (fix: bash scripts/check_format.sh --fix)"
exit 1
