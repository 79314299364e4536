#!/usr/bin/env bash
# pip's way to the Python package: `pip install --no-build-isolation
# --no-index ./python` into a virtual environment that sees Debian's torch
# (--system-site-packages), with the extension built in the given build
# tree (GOSSIPD_CMAKE_BUILD_DIR, python/setup.py). Asserts: pip installs it
# under the environment, the package there trains a member of one for three
# steps with torch, python/examples/train.py runs two workers to their end
# with it (one epoch of 2048 samples), pip lists it at the project's
# version, and uninstalls every file it installed.
# Usage: pip_install.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
build=$(cd "$2" && pwd)
python=/usr/bin/python3
if ! "$python" -c 'import ensurepip, pip' 2>/dev/null; then
  echo "pip_install.sh: SKIPPED: no python3-venv or python3-pip (as root: deploy/install-deps.sh --deploy)"
  exit 0
fi
work=$(mktemp -d)
w1=
trap '[ -z "$w1" ] || kill "$w1" 2>/dev/null; rm -rf "$work"' EXIT
# pip builds in the directory it is given: a copy of what setup.py reads
# (python/ and the top CMakeLists.txt for the version), not the source tree.
mkdir -p "$work/src/python"
cp "$src/CMakeLists.txt" "$work/src/"
cp -r "$src/python/setup.py" "$src/python/pyproject.toml" "$src/python/gossipd" "$work/src/python/"
# Debian's pip (python3-pip), seen through --system-site-packages, installs
# into the environment it runs in: no copy of pip installed into it (3.4 s
# of this script's 29 s of CPU).
"$python" -m venv --system-site-packages --without-pip "$work/venv"
pip=("$work/venv/bin/python" -m pip)
GOSSIPD_CMAKE_BUILD_DIR="$build" "${pip[@]}" install -q --no-build-isolation --no-index "$work/src/python"
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
# The example, as a user runs it: two processes, on ports nobody holds.
read -r port http_port < <("$work/venv/bin/python" -c '
import socket
def bindable(p):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", p))
            return True
        except OSError:
            return False
found = []  # two ports p with p + 1 free too, apart
while len(found) < 2:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        p = s.getsockname()[1]
    if bindable(p) and bindable(p + 1) and all(abs(p - q) > 1 for q in found):
        found.append(p)
print(*found)
')
example=("$work/venv/bin/python" "$src/python/examples/train.py" --workers 2 --epochs 1 --samples 2048
         --port "$port" --http-port "$http_port")
"${example[@]}" --rank 1 >"$work/w1.log" 2>&1 &
w1=$!
"${example[@]}" --rank 0 >"$work/w0.log" 2>&1 || { cat "$work/w0.log" >&2; exit 1; }
wait "$w1" || { cat "$work/w1.log" >&2; exit 1; }
w1=
grep -q "epoch 1/1" "$work/w0.log" && grep -q "epoch 1/1" "$work/w1.log" ||
  { echo "pip_install.sh: the example did not end its epoch:" >&2; cat "$work"/w*.log >&2; exit 1; }
echo "pip_install.sh: the example ran: $(grep -h 'epoch 1/1' "$work"/w*.log | tr '\n' ' ')"
want=$(sed -nE 's/^project\(gossipd VERSION ([0-9.]+).*/\1/p' "$src/CMakeLists.txt")
have=$("${pip[@]}" show gossipd | sed -n 's/^Version: //p')
[ "$have" = "$want" ] || { echo "pip_install.sh: pip lists gossipd $have, the project is $want" >&2; exit 1; }
"${pip[@]}" uninstall -q -y gossipd
left=$(find "$work/venv" -path '*gossipd*' | head -5)
[ -z "$left" ] || { echo "pip_install.sh: pip uninstall left: $left" >&2; exit 1; }
echo "pip_install.sh: installed, trained, listed at $have and uninstalled"
