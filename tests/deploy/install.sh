#!/usr/bin/env bash
# `cmake --install` puts gossipd and gossipctl in PREFIX/bin (and the Python
# package in PREFIX/lib/python3/dist-packages), where
# deploy/systemd runs them (/usr/local/bin, the default prefix), and both
# print the version project(VERSION) defines.
#   tests/deploy/install.sh BUILD_DIR
set -euo pipefail
build=$(realpath "$1")
root=$(cd "$(dirname "$0")/../.." && pwd)
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" > /dev/null
want=$(sed -n 's/^project(gossipd VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")
[ -n "$want" ] || { echo "FAIL no version in CMakeLists.txt"; exit 1; }
grep -q 'ExecStart=/usr/local/bin/gossipd ' "$root/deploy/systemd/gossipd@.service" \
  || { echo "FAIL the systemd unit does not run /usr/local/bin/gossipd"; exit 1; }
for prog in gossipd gossipctl; do
  [ -x "$prefix/bin/$prog" ] || { echo "FAIL $prog not installed in PREFIX/bin"; exit 1; }
  got=$("$prefix/bin/$prog" --version)
  [ "$got" = "$prog $want" ] || { echo "FAIL $prog --version says '$got', want '$prog $want'"; exit 1; }
  echo "ok   $prog installed, $got"
done
# The Python package, where the build made it: PREFIX/lib/python3/dist-packages.
if [ -d "$build/python/gossipd" ]; then
  site="$prefix/lib/python3/dist-packages"
  PYTHONDONTWRITEBYTECODE=1 PYTHONPATH="$site" /usr/bin/python3 -c 'import gossipd; gossipd.Member' \
    || { echo "FAIL the gossipd Python package does not import from $site"; exit 1; }
  echo "ok   the gossipd Python package installed in PREFIX/lib/python3/dist-packages"
fi
