#!/usr/bin/env bash
# No loop in daemon/ or python/ sleeps and looks again for something
# membership signals (a view, labels, a LEAVE on the wire): those waits are
# Membership::wait_until (protocol/transport/change_signal.h). Every sleep left in
# the tree is listed below with what it is for; a new one fails this check
# until it is either replaced by a wait on an event or listed here with
# its reason.
#
#   tests/house/no_poll_sleeps.sh [ROOT]
set -u
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$root" || exit 2

# file: why it sleeps
allowed='
daemon/ctl/child_process.cc: gossipctl waits for a child process (waitpid has no timeout; a process, not a view)
daemon/ctl/collect.cc: gossipctl collect reads remote daemons'"'"' /status at the interval it was given
daemon/ctl/worker_watch.cc: compare'"'"'s progress line, redrawn twice a second while its workers run
daemon/ctl/soak.cc: gossipctl soak samples every member'"'"'s /status twice a second (its measures are of those samples)
daemon/bench/membership_bench.cc: gossipctl bench membership counts the bytes sent over a window of time it is given
'

status=0
while IFS=: read -r file line _; do
  if ! grep -q "^${file}:" <<<"$allowed"; then
    echo "no_poll_sleeps: ${file}:${line}: a sleep outside the list in $0; wait on an event (Membership::wait_until, a ChangeSignal) or list it with its reason"
    status=1
  fi
done < <(grep -rnE 'sleep_for|sleep_until|usleep|nanosleep|time\.sleep' daemon python/gossipd --include='*.cc' --include='*.h' --include='*.py')

# The list names no file that no longer sleeps (a stale reason reads as a rule).
while IFS=: read -r file _; do
  [ -n "$file" ] || continue
  if ! grep -qE 'sleep_for|sleep_until|usleep|nanosleep' "$file" 2>/dev/null; then
    echo "no_poll_sleeps: $file is listed but has no sleep: take it off the list"
    status=1
  fi
done <<<"$allowed"

[ $status = 0 ] && echo "no_poll_sleeps: every sleep in daemon/ and python/gossipd is listed with its reason"
exit $status
