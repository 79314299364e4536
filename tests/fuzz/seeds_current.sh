#!/bin/sh
# Fuzz.SeedsAreWhatMakeSeedsWrites: every seed fuzz_make_seeds writes is in
# the corpus byte for byte (seeds written by hand, e.g.
# partition_text/overflowing-count, are the corpus's own and not checked).
# Usage: seeds_current.sh FUZZ_MAKE_SEEDS CORPUS_DIR
set -eu
made=$(mktemp -d)
trap 'rm -rf "$made"' EXIT
"$1" "$made" > /dev/null
stale=0
for f in $(cd "$made" && find . -type f | sort); do
  if ! cmp -s "$made/$f" "$2/$f"; then
    echo "tests/fuzz/corpus/${f#./} is not what the code sends today: run build/bin/fuzz_make_seeds tests/fuzz/corpus and commit it"
    stale=1
  fi
done
[ "$stale" = 0 ] && echo "$(cd "$made" && find . -type f | wc -l) seeds as fuzz_make_seeds writes them"
exit "$stale"
