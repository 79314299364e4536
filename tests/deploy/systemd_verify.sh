#!/usr/bin/env bash
# deploy/systemd/gossipd@.service as `systemd-analyze verify` reads it, as
# instance w0, with the built gossipd where the unit runs /usr/local/bin/gossipd
# (verify checks that the command exists).
# Usage: systemd_verify.sh DEPLOY_SYSTEMD_DIR GOSSIPD
set -euo pipefail
if ! command -v systemd-analyze >/dev/null; then
  echo "systemd_verify.sh: SKIPPED: no systemd-analyze (as root: deploy/install-deps.sh --deploy)"
  exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
grep -q '^ExecStart=/usr/local/bin/gossipd ' "$1/gossipd@.service" ||
  { echo "systemd_verify.sh: gossipd@.service no longer runs /usr/local/bin/gossipd" >&2; exit 1; }
sed "s|^ExecStart=/usr/local/bin/gossipd |ExecStart=$2 |" "$1/gossipd@.service" >"$work/gossipd@w0.service"
out=$(systemd-analyze verify "$work/gossipd@w0.service" 2>&1) || { echo "$out" >&2; exit 1; }
# verify exits 0 on some warnings about the unit itself; any line naming it fails.
if grep -q "gossipd@" <<<"$out"; then echo "$out" >&2; exit 1; fi
echo "systemd_verify.sh: gossipd@.service verified"
