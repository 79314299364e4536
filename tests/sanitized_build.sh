#!/usr/bin/env bash
# Configures and builds build-sanitize-<LIST>/ with clang and
# -fsanitize=LIST (RelWithDebInfo with line tables only, assertions kept). With address or
# undefined in LIST the tree also holds the libFuzzer targets (the code is
# built with -fsanitize=fuzzer-no-link; a test binary's own sources are not:
# tests/CMakeLists.txt), so the sanitized tests and the
# fuzzers share one build. Extra arguments are build targets.
#
#   tests/sanitized_build.sh address,undefined [TARGET...]
# Prints the build directory on its last line.
set -euo pipefail
cd "$(dirname "$0")/.."

list="${1:?usage: tests/sanitized_build.sh LIST [TARGET...] (LIST: address,undefined or thread)}"
shift
if [[ ! "$list" =~ ^(address|undefined|thread|leak)(,(address|undefined|thread|leak))*$ ]]; then
  echo "tests/sanitized_build.sh: '$list': use a comma list of address, undefined, thread, leak" >&2
  exit 2
fi
./deploy/install-deps.sh --fuzz >&2
dir="build-sanitize-${list//,/-}"
flags="-fsanitize=$list -fno-omit-frame-pointer -fno-sanitize-recover=all"
fuzz=OFF
link="-fsanitize=$list"
if [[ "$list" != *thread* ]]; then
  flags="$flags -fsanitize=fuzzer-no-link"
  fuzz=ON
  # Executables not position-independent: libFuzzer's coverage tables (a
  # pointer per instrumented edge) were 824k relative relocations in
  # gossipd and 1.18M in daemon_tests, applied at every start (a page fault
  # a page of them): `gossipd --version` took 225 ms of CPU, 168 without
  # (medians of six alternated runs of ten starts; tests/README.md).
  link="$link -no-pie"
fi
# Line tables, not full debug info: the sanitizers' reports need file and
# line only, and full -g compiled a file here 20-40% slower (one file timed).
# A unity build (CMakeLists.txt) whatever the default: 395 s against 683 s here.
# The test binaries' own sources and the control plane's rooms at -O0
# (tests/CMakeLists.txt, cmake/Rooms.cmake: what runs once a value stays -O2).
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ -DGOSSIPD_FUZZ=$fuzz -DGOSSIPD_UNITY_BUILD=ON \
  -DGOSSIPD_TEST_OPTIMIZE=-O0 -DGOSSIPD_CONTROL_OPTIMIZE=-O0 \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -gline-tables-only" \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$link" >&2
if [ $# -gt 0 ]; then
  for t in "$@"; do cmake --build "$dir" -j2 --target "$t" >&2; done
else
  cmake --build "$dir" -j2 >&2
fi
echo "$dir"
