#!/usr/bin/env bash
# The one test command: installs missing Debian packages, configures build/
# (Release, assertions kept), builds with two jobs and runs every test.
# Extra arguments go to ctest (e.g. ./tests/run.sh -R Gradient).
#
# ./tests/run.sh --sanitize address,undefined [ctest args]
#   builds into build-sanitize-<list>/ with -fsanitize=<list> (RelWithDebInfo)
#   and runs the tests there; any report fails the run. `thread` works too
#   (give it its own run: it does not combine with address).
set -euo pipefail
cd "$(dirname "$0")/.."

sanitize=""
if [[ "${1:-}" == "--sanitize" ]]; then
  sanitize="${2:?--sanitize needs a list, e.g. address,undefined}"
  shift 2
elif [[ "${1:-}" == --sanitize=* ]]; then
  sanitize="${1#--sanitize=}"
  shift
fi

./deploy/install-deps.sh
if [[ -z "$sanitize" ]]; then
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
  cmake --build build -j2
  ctest --test-dir build --output-on-failure -j2 --timeout 900 "$@"
  exit 0
fi

if [[ ! "$sanitize" =~ ^(address|undefined|thread|leak)(,(address|undefined|thread|leak))*$ ]]; then
  echo "tests/run.sh: --sanitize '$sanitize': use a comma list of address, undefined, thread, leak" >&2
  exit 2
fi
dir="build-sanitize-${sanitize//,/-}"
# GCC 12 reports false maybe-uninitialized warnings inside <regex> once the
# sanitizers instrument it; the project builds with -Werror.
flags="-fsanitize=$sanitize -fno-omit-frame-pointer -fno-sanitize-recover=all -Wno-maybe-uninitialized"
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" -DCMAKE_SHARED_LINKER_FLAGS="$flags"
cmake --build "$dir" -j2
# Reports fail the test that produced them; leaks of the process are errors.
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:${TSAN_OPTIONS:-}"
ctest --test-dir "$dir" --output-on-failure -j2 --timeout 1800 "$@"
