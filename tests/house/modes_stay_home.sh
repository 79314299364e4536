#!/usr/bin/env bash
# A mode is its folder: code outside daemon/modes/ (and so outside the
# registries daemon/modes/modes.cc and tools.cc) names no mode. Shared code
# asks the mode (daemon/worker/mode.h) instead of spelling its name. The
# modes are the registry's, as `gossipd --help` lists them, so a new mode is
# checked without this file knowing it. Checked in daemon/, protocol/,
# topology/, trainer/, proto/ and the Python module (its binding and its
# package; python/examples/ are a user's scripts and may name any mode):
#   1. no include of a mode's folder (daemon/modes/<name>/...);
#   2. no string literal that names a mode, alone or as a word of a longer
#      text ("grid", "groups:2", "--algo crossover", "algo == 'allreduce'"),
#      comments aside, unless listed below with why; a flag's name
#      ("--grid") is the flag, not the mode;
#   3. no file or folder whose name holds a mode's name as a word
#      (topology/grid.h, trainer/sparse/): a mode's code is in its folder;
#   4. the Python Worker's default mode is the daemon's (default_mode()),
#      not a literal.
# The literals are read by mode_literals.py, one process for all files.
#
#   tests/house/modes_stay_home.sh [ROOT [GOSSIPD]]
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=${1:-$(cd "$here/../.." && pwd)}
cd "$root" || exit 2
gossipd=${2:-$root/build/bin/gossipd}

# The registry's modes: gossipd --help's first line ends "...: a, b, c".
line=$("$gossipd" --help 2>/dev/null | head -n 1)
names=$(sed -nE 's/.*modes \(gossipd run --algo\): (.*)$/\1/p' <<<"$line" | tr -d ' ' | tr ',' '\n' | grep -E '^[a-z][a-z0-9_-]*$')
if [ -z "$names" ]; then
  echo "modes_stay_home: no mode read from '$gossipd --help' (its first line: '$line'): build gossipd or name it"
  exit 2
fi
modes=$(paste -sd'|' <<<"$names")

# file|name|why: a literal that holds the word but not the mode, or a mode
# named where it must be (each entry is checked to still be needed, below).
allowed='
daemon/config/run_options.h|allreduce|kDefaultMode: the one default mode, below the modes so that every command and the binding see it
daemon/bench/collective_bench.h|allreduce|the collective benchmarked (gossipctl bench allreduce), not the mode
daemon/bench/collective_bench.cc|allreduce|the collective benchmarked, not the mode
daemon/bench/collective_ops.cc|allreduce|the collective benchmarked, not the mode
protocol/*/*|allreduce|the collective (ring, doubling, two levels, compressed), which the modes share
protocol/*/*|crossover|Crossover averaging, a gossip algorithm protocol/ holds for the gossip modes and the hosted member
python/binding.cc|allreduce|the collective that averages the gradients, not the mode
daemon/ctl/compare_report.cc|grid|gnuplot'"'"'s "set grid" (the plot'"'"'s grid lines)
daemon/ctl/compare.cc|crossover|the setup line says what compare'"'"'s --groups does: hierarchical Crossover
daemon/ctl/compare.cc|groups|the hierarchical Crossover'"'"'s groups of members (--groups), not the compute groups mode
daemon/ctl/compare_flags.cc|groups|the hierarchical Crossover'"'"'s groups of members (--groups), not the compute groups mode
daemon/plan/profile_cache.cc|pipeline|the layer profiles'"'"' file names and header on disk: renaming them would drop every cache made so far
python/gossipd/torch.py|groups|torch'"'"'s parameter groups (optimizer.param_groups), not the mode
'

status=0
fail() {
  echo "modes_stay_home: $1"
  status=1
}
declare -A used  # the list's entries that excused something
allowed_here() {  # FILE NAME: the list's file field may be a pattern (protocol/*/*)
  local file name _
  while IFS='|' read -r file name _; do
    # shellcheck disable=SC2053
    [[ -n "$file" && $1 == $file && $2 == "$name" ]] && used["$file|$name"]=1 && return 0
  done <<<"$allowed"
  return 1
}

shared=$({
  find daemon -type f \( -name '*.cc' -o -name '*.h' \) -not -path 'daemon/modes/*'
  find protocol topology trainer proto -type f \( -name '*.cc' -o -name '*.h' -o -name '*.proto' \)
  find python -type f \( -name '*.cc' -o -name '*.h' -o -name '*.py' \) -not -path 'python/examples/*'
} | sort)

while IFS='|' read -r f n name text; do
  if [ "$name" = include ]; then
    fail "$f:$n: includes a mode's folder ($text): ask the Mode (daemon/worker/mode.h) or the registry"
    continue
  fi
  allowed_here "$f" "$name" && continue
  fail "$f:$n: names the mode \"$name\" ($text) outside daemon/modes/: make it a question the Mode answers, or build the text from the registry"
done < <(python3 "$here/mode_literals.py" "$modes" <<<"$shared")

# 3: a path outside daemon/modes/ (and the tests' mirror, tests/modes/)
# that names a mode.
while read -r path; do
  # In bash, not a grep a path: ~500 paths, three processes each, were 9 s of the test's 11.
  [[ "${path##*/}" =~ (^|[_.-])($modes)([_.-]|$) ]] || continue
  name=${BASH_REMATCH[2]}
  allowed_here "$path" "$name" && continue
  fail "$path: a file or folder named for a mode outside daemon/modes/: move it into the mode's folder"
done < <(find daemon protocol topology trainer proto python -not -path 'daemon/modes/*' -not -path 'python/examples*' \
  -not -name CMakeLists.txt -not -name '*.md' | sort)

while IFS=: read -r file n _; do
  fail "$file:$n: the Python Worker's default algo is a literal: use default_mode() (one default, the daemon's)"
done < <(grep -rnE 'def [a-z_]+\(.*algo="' python/gossipd)

# The list names no literal that is gone (a stale reason reads as a rule):
# each entry excused a literal or a name above.
while IFS='|' read -r file name _; do
  [ -n "$file" ] || continue
  [ -n "${used["$file|$name"]:-}" ] || fail "$file no longer spells \"$name\" in a literal or a name: take it off the list"
done <<<"$allowed"

[ $status = 0 ] && echo "modes_stay_home: no code outside daemon/modes/ names a mode ($(tr '\n' ' ' <<<"$names"| sed 's/ $//'))"
exit $status
