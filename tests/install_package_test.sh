#!/usr/bin/env bash
# Goal: an embedder can use uringmq through `find_package(uringmq)` after `cmake --install`.
# Method: install the build tree into a temporary prefix, build examples/embed against it with
# a separate CMake project, run it on a temporary store. Fails if any step fails.
set -euo pipefail
build_dir=$1
source_dir=$2
work=$(mktemp -d "${build_dir}/install-test-XXXXXX")
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
cmake -S "$source_dir/examples/embed" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/build" -j2 >/dev/null
"$work/build/embed_example" "$work/data"
echo "1 passed, 0 failed"
