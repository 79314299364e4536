#!/usr/bin/env bash
# The one test command: installs missing Debian packages, configures build/
# (Release, assertions kept), builds with two jobs and runs every test.
# Extra arguments go to ctest (e.g. ./tests/run.sh -R Gradient).
set -euo pipefail
cd "$(dirname "$0")/.."

./deploy/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j2
ctest --test-dir build --output-on-failure -j2 --timeout 900 "$@"
