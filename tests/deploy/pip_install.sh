#!/usr/bin/env bash
# pip's way to the Python package: `pip install --no-build-isolation
# --no-index ./python` into a virtual environment that sees Debian's torch
# (--system-site-packages), with the extension built in the given build
# tree (GOSSIPD_CMAKE_BUILD_DIR, python/setup.py). Asserts: pip installs it
# under the environment, the package there trains a member of one for three
# steps with torch, pip lists it at the project's version, and uninstalls
# every file it installed.
# Usage: pip_install.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
build=$(cd "$2" && pwd)
python=/usr/bin/python3
if ! "$python" -c 'import ensurepip' 2>/dev/null; then
  echo "pip_install.sh: SKIPPED: no python3-venv (as root: deploy/install-deps.sh --deploy)"
  exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# pip builds in the directory it is given: a copy of what setup.py reads
# (python/ and the top CMakeLists.txt for the version), not the source tree.
mkdir "$work/src"
cp -r "$src/python" "$src/CMakeLists.txt" "$work/src/"
"$python" -m venv --system-site-packages "$work/venv"
GOSSIPD_CMAKE_BUILD_DIR="$build" "$work/venv/bin/pip" install -q --no-build-isolation --no-index "$work/src/python"
cd "$work"  # nowhere near the source's gossipd/
"$work/venv/bin/python" - "$work/venv" <<'PY'
import os, socket, sys
import torch
import gossipd, gossipd.torch as gd
venv = sys.argv[1]
assert gossipd.__file__.startswith(venv), f"gossipd imported from {gossipd.__file__}, not the environment {venv}"
with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
with gd.Worker(id="solo", listen=f"tcp://127.0.0.1:{port}") as w:
    opt = gd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), model, w)
    w.sync_state(model, opt)
    for _ in range(3):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(torch.randn(16, 4)), torch.randint(0, 3, (16,))).backward()
        opt.step()
    assert w.round() == 3, w.round()
print(f"pip_install.sh: gossipd from {os.path.dirname(gossipd.__file__)} trained 3 steps")
PY
want=$(sed -nE 's/^project\(gossipd VERSION ([0-9.]+).*/\1/p' "$src/CMakeLists.txt")
have=$("$work/venv/bin/pip" show gossipd | sed -n 's/^Version: //p')
[ "$have" = "$want" ] || { echo "pip_install.sh: pip lists gossipd $have, the project is $want" >&2; exit 1; }
"$work/venv/bin/pip" uninstall -q -y gossipd
left=$(find "$work/venv" -path '*gossipd*' | head -5)
[ -z "$left" ] || { echo "pip_install.sh: pip uninstall left: $left" >&2; exit 1; }
echo "pip_install.sh: installed, trained, listed at $have and uninstalled"
