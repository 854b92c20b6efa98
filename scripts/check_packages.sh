#!/usr/bin/env bash
# Fails when a build used a file from a Debian package that scripts/setup.sh does not install (directly
# or through the Depends of what it installs), so that setup.sh cannot silently rot on a machine that
# happens to have more installed. What "used" means: every system header the compiler read
# (ninja's dependency log), every file CMake read to configure (config/find modules) and every file
# path CMake's cache recorded (libraries, include folders, programs).
# Usage: scripts/check_packages.sh BUILD_DIR
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: scripts/check_packages.sh BUILD_DIR}

used_files() {
  ninja -C "$build" -t deps 2>/dev/null | sed -n 's/^ *\(\/usr\/[^ ]*\)$/\1/p'
  # The files `cmake` read (the build.ninja rule that re-runs it lists them).
  sed -n '/^build build.ninja/,/^$/p' "$build/build.ninja" | tr ' ' '\n' | grep '^/usr/' || true
  # Paths CMake found (libraries, headers folders, programs), dropping the -NOTFOUND ones.
  sed -n 's/^[A-Za-z0-9_]*:\(FILEPATH\|PATH\|STRING\)=\(\/usr\/[^;]*\)$/\2/p' "$build/CMakeCache.txt" | tr ';' '\n'
}

mapfile -t files < <(used_files | grep -v NOTFOUND | sort -u)
[ ${#files[@]} -gt 0 ] || { echo "check_packages: no build in '$build'" >&2; exit 1; }

# The package that owns each file (the path as given, else with symlinks resolved), from dpkg's file
# lists in one pass.
declare -A owner=()
declare -A wanted_path=()
for f in "${files[@]}"; do
  [ -f "$f" ] || continue  # files only: a folder such as /usr/include belongs to many packages
  wanted_path["$f"]="$f"
  r=$(readlink -f "$f")
  [ -n "${wanted_path[$r]:-}" ] || wanted_path["$r"]="$f"
done
while read -r hit; do  # "/var/lib/dpkg/info/PKG[:ARCH].list:PATH"
  list=${hit%%.list:*}
  path=${hit#*.list:}
  pkg=$(basename "$list")
  pkg=${pkg%%:*}
  f=${wanted_path[$path]:-}
  [ -n "$f" ] && owner["$pkg"]+="$f "
done < <(printf '%s\n' "${!wanted_path[@]}" | grep -H -F -x -f - /var/lib/dpkg/info/*.list || true)

# What setup.sh installs, with the closure of their Depends/PreDepends (Recommends are not installed).
mapfile -t wanted < <(sed -n '/^APT_PACKAGES=(/,/^)/p' scripts/setup.sh | grep -v '^ *#' | tr -d '()' |
  sed 's/APT_PACKAGES=//' | tr ' ' '\n' | grep -v '^$')
mapfile -t closure < <(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
  --no-replaces --no-enhances "${wanted[@]}" 2>/dev/null | grep -v '^ ' | sed 's/:amd64$//' | sort -u)
declare -A provided=()
for p in "${closure[@]}"; do provided["$p"]=1; done
# Every Debian system has its essential packages.
while read -r p; do provided["$p"]=1; done < <(dpkg-query -W -f='${Package} ${Essential}\n' | awk '$2 == "yes" {print $1}')

missing=0
for pkg in $(printf '%s\n' "${!owner[@]}" | sort); do
  [ -n "${provided[$pkg]:-}" ] && continue
  echo "check_packages: the build uses package '$pkg' (e.g. $(echo "${owner[$pkg]}" | cut -d' ' -f1)), which scripts/setup.sh does not install"
  missing=$((missing + 1))
done
if [ "$missing" -gt 0 ]; then
  echo "check_packages: add the package(s) above to APT_PACKAGES in scripts/setup.sh"
  exit 1
fi
echo "check_packages: ok (${#owner[@]} packages used, all installed by setup.sh)"
