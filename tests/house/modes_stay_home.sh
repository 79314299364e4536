#!/usr/bin/env bash
# A mode is its folder: code outside daemon/modes/<name>/ (and the
# registries daemon/modes/modes.cc and tools.cc) names no mode. Shared code
# asks the mode (daemon/worker/mode.h) instead of spelling its name. Checked
# in daemon/ and the Python module's binding and package:
#   1. no include of a mode's folder (daemon/modes/<name>/...);
#   2. no string literal that is a mode's name or a compare entry of one
#      ("grid", "groups:2"), comments aside, unless listed below with why;
#   3. the Python Worker's default mode is the daemon's (default_mode()),
#      not a literal.
#
#   tests/house/modes_stay_home.sh [ROOT]
set -u
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$root" || exit 2

modes='allreduce|crossover|sgp|osgp|groups|grid|pipeline|sparse'
# file|name|why: a literal that is the word but not the mode
allowed='
daemon/config/run_options.h|allreduce|kDefaultMode: the one default mode, below the modes so that every command and the binding see it
daemon/bench/collective_bench.h|allreduce|the collective benchmarked (gossipctl bench allreduce), not the mode
daemon/bench/collective_bench.cc|allreduce|the collective benchmarked, not the mode
daemon/bench/collective_ops.cc|allreduce|the collective benchmarked, not the mode
'

status=0
fail() {
  echo "modes_stay_home: $1"
  status=1
}

shared=$(find daemon python -type f \( -name '*.cc' -o -name '*.h' \) -not -path 'daemon/modes/*' | sort)
for f in $shared; do
  while IFS=: read -r line text; do
    fail "$f:$line: includes a mode's folder ($text): ask the Mode (daemon/worker/mode.h) or the registry"
  done < <(grep -nE '#include "daemon/modes/[a-z_]+/' "$f")
  # Comments stripped; each literal that is a mode's name (or NAME:ARG).
  while IFS=: read -r line word; do
    name=${word%%:*}
    grep -q "^$f|$name|" <<<"$allowed" && continue
    fail "$f:$line: names the mode \"$word\" outside daemon/modes/$name/: make it a question the Mode answers"
  done < <(sed -E 's#//.*$##' "$f" | grep -noE "\"($modes)(:[^\"]*)?\"" | tr -d '"')
done

while IFS=: read -r file line _; do
  fail "$file:$line: the Python Worker's default algo is a literal: use default_mode() (one default, the daemon's)"
done < <(grep -rnE 'def [a-z_]+\(.*algo="' python/gossipd)

# The list names no literal that is gone (a stale reason reads as a rule).
while IFS='|' read -r file name _; do
  [ -n "$file" ] || continue
  sed -E 's#//.*$##' "$file" 2>/dev/null | grep -qE "\"$name\"" || fail "$file no longer spells \"$name\": take it off the list"
done <<<"$allowed"

[ $status = 0 ] && echo "modes_stay_home: no code outside daemon/modes/<name>/ and the registries names a mode"
exit $status
