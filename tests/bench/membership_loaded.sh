#!/usr/bin/env bash
# The membership alone at scale with every core busy (issue 53):
# `gossipctl bench membership` (N members of the real membership code in one
# process, killed one at a time after a quiet window) beside one busy loop per
# core, so the members get what a starved machine leaves them. Prints the
# bench's JSON line (traffic, detection median and worst, false evictions,
# members cut off) and the CPU it took; exits as the bench does (0: every
# kill detected, nobody alive evicted).
#
#   tests/bench/membership_loaded.sh [GOSSIPCTL] [-- BENCH FLAGS]
#   env: MEMBERS (1000), KILLS (10), WINDOW_S (600: the soak), LOOPS (nproc)
set -euo pipefail
cd "$(dirname "$0")/../.."
ctl=build/bin/gossipctl
if [ $# -gt 0 ] && [ "$1" != "--" ]; then ctl=$1; shift; fi
[ "${1:-}" != "--" ] || shift
MEMBERS=${MEMBERS:-1000}
KILLS=${KILLS:-10}
WINDOW_S=${WINDOW_S:-600}
LOOPS=${LOOPS:-$(nproc)}

loops=()
stop_loops() {
  for p in "${loops[@]}"; do kill "$p" 2>/dev/null || true; done
  wait "${loops[@]}" 2>/dev/null || true
}
trap stop_loops EXIT
for ((i = 0; i < LOOPS; i++)); do
  (while :; do :; done) &
  loops+=($!)
done
echo "# $LOOPS busy loops beside gossipctl bench membership --members $MEMBERS --kills $KILLS --window-s $WINDOW_S $*"
status=0
# The members' own log lines (a member killed, evicted) are not the result.
/usr/bin/time -f '# cpu: %U s user, %S s system in %e s' "$ctl" bench membership --members "$MEMBERS" \
  --kills "$KILLS" --window-s "$WINDOW_S" "$@" 2>&1 | grep -v '^\[20' || status=$?
exit "$status"
