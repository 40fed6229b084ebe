#!/usr/bin/env bash
# Goal: an embedder can use uringmq through `find_package(uringmq)` after `cmake --install`, with
# only the public API installed: include/uringmq/*.h, each compiling on its own, and libraries
# without the test disks (SimDisk, FaultyDisk).
# Method: install the build tree into a temporary prefix, check what was installed, build
# examples/embed against it with a separate CMake project, run it on a temporary store (it sends
# and reads decoded messages back). Fails if any step fails.
set -euo pipefail
build_dir=$1
source_dir=$2
work=$(mktemp -d "${build_dir}/install-test-XXXXXX")
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
headers=$(cd "$work/prefix/include" && find . -type f | sort)
if [ -z "$headers" ] || echo "$headers" | grep -qv '^\./uringmq/[a-z_]*\.h$'; then
  echo "installed headers other than include/uringmq/*.h:"; echo "$headers"; exit 1
fi
for header in $headers; do
  echo "#include <${header#./}>" | ${CXX:-c++} -std=c++20 -fsyntax-only -Wall -Wextra -Werror \
    -I"$work/prefix/include" -x c++ - || { echo "${header#./} does not compile alone"; exit 1; }
done
nm -C "$work/prefix"/lib*/*.a >"$work/symbols" 2>/dev/null
if grep -q 'SimDisk\|FaultyDisk' "$work/symbols"; then
  echo "an installed library contains SimDisk or FaultyDisk"; exit 1
fi
cmake -S "$source_dir/examples/embed" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/build" -j2 >/dev/null
"$work/build/embed_example" "$work/data"
echo "1 passed, 0 failed"
