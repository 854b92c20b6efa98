#!/usr/bin/env bash
# THIRD_PARTY_NOTICES.md from what a build really links: the NEEDED entries of `segmux` and
# `libsegmux.so` (rows from scripts/notices/linked.tsv: package, use, licence) and every shared library of
# their load-time closure (ldd) with its Debian package, written into scripts/notices/template.md.
#   scripts/third_party_notices.sh BUILD_DIR            writes THIRD_PARTY_NOTICES.md
#   scripts/third_party_notices.sh BUILD_DIR --check    fails when the committed file differs (test.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: third_party_notices.sh BUILD_DIR [--check]}
mode=${2:-write}
rows=scripts/notices/linked.tsv
binaries=("$build/segmux" "$(readlink -f "$build/libsegmux.so")")
for b in "${binaries[@]}"; do
  [ -f "$b" ] || { echo "third_party_notices: '$b' is missing: build first" >&2; exit 1; }
done

needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }
# The row of linked.tsv whose soname prefix starts the NEEDED name (libfoo.so.N -> libfoo.so).
row_of() { awk -F'\t' -v lib="$1" '!/^#/ && NF >= 4 && index(lib, $1) == 1 && (length(lib) == length($1) || substr(lib, length($1) + 1, 1) == ".") { print; exit }' "$rows"; }

table=$(mktemp) closure=$(mktemp) out=$(mktemp)
trap 'rm -f "$table" "$closure" "$out"' EXIT
declare -A in_segmux=() in_lib=() seen_row=()
for lib in $(needed "${binaries[0]}"); do in_segmux[$lib]=1; done
for lib in $(needed "${binaries[1]}"); do in_lib[$lib]=1; done
unknown=()
{
  echo "| library | Debian package | used for | licence | linked by |"
  echo "| --- | --- | --- | --- | --- |"
  for lib in $(printf '%s\n' "${!in_segmux[@]}" "${!in_lib[@]}" | sort -u); do
    row=$(row_of "$lib")
    if [ -z "$row" ]; then unknown+=("$lib"); continue; fi
    IFS=$'\t' read -r soname pkg use licence _ <<<"$row"
    seen_row[$soname]=1
    by=""
    [ -n "${in_lib[$lib]:-}" ] && by="libsegmux.so"
    [ -n "${in_segmux[$lib]:-}" ] && by="${by:+$by, }segmux"
    echo "| \`$lib\` | $pkg | $use | $licence | $by |"
  done
  # Optional rows nothing in this build links: listed for the builds that do.
  while IFS=$'\t' read -r soname pkg use licence optional; do
    case "$soname" in '#'* | '') continue ;; esac
    [ -n "${seen_row[$soname]:-}" ] && continue
    if [ "$optional" = optional ]; then
      echo "| \`$soname\` | $pkg | $use | $licence | not in this build |"
    else
      echo "third_party_notices: $rows lists '$soname', which neither binary links: remove the row" >&2
      exit 1
    fi
  done <"$rows"
} >"$table"
if [ ${#unknown[@]} -gt 0 ]; then
  echo "third_party_notices: the build links ${unknown[*]} with no row in $rows: add package, use and licence" >&2
  exit 1
fi

# The load-time closure, by Debian package (the indirect dependencies come mostly from FFmpeg).
pkg_of() {
  local p
  for p in "$1" "${1#/usr}" "/usr$1"; do
    dpkg -S "$p" 2>/dev/null | head -n1 | cut -d: -f1 && return 0
  done
  echo "not a Debian package ($(dirname "$1"))"
}
for b in "${binaries[@]}"; do
  ldd "$b" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }'
done | sort -u | while read -r path; do
  printf '%s\t%s\n' "$(pkg_of "$(readlink -f "$path")")" "$(basename "$path")"
done | sort -u | awk -F'\t' '{ libs[$1] = libs[$1] (libs[$1] ? ", " : "") "`" $2 "`" } END { for (p in libs) print "| " p " | " libs[p] " |" }' |
  sort >"$closure"
{
  echo "| Debian package | libraries |"
  echo "| --- | --- |"
  cat "$closure"
} >"$closure.md"
mv "$closure.md" "$closure"
count=$(($(wc -l <"$closure") - 2))

awk -v table="$table" -v closure="$closure" -v count="$count" '
  /^@LINKED_TABLE@$/ { while ((getline line < table) > 0) print line; next }
  /^@CLOSURE_TABLE@$/ { while ((getline line < closure) > 0) print line; next }
  { gsub(/@CLOSURE_COUNT@/, count); print }' scripts/notices/template.md >"$out"

if [ "$mode" = --check ]; then
  if ! diff -u THIRD_PARTY_NOTICES.md "$out"; then
    echo "third_party_notices: THIRD_PARTY_NOTICES.md is not what this build links;" \
         "regenerate it with: bash scripts/third_party_notices.sh $build" >&2
    exit 1
  fi
  echo "third_party_notices: THIRD_PARTY_NOTICES.md matches the link closure ($count packages)"
else
  cp "$out" THIRD_PARTY_NOTICES.md
  echo "third_party_notices: wrote THIRD_PARTY_NOTICES.md ($count packages in the closure)"
fi
