#!/usr/bin/env bash
# Fails when a C or C++ source differs from what clang-format makes of it
# (.clang-format at the root), naming the files. With --fix, formats them.
#   tests/format.sh [--fix]
set -euo pipefail
cd "$(dirname "$0")/.."
# Tracked sources and new ones not yet added (not the ignored build trees),
# so that a file is checked before its first commit.
mapfile -t files < <(git ls-files --cached --others --exclude-standard '*.cc' '*.h' '*.c' 2>/dev/null || find daemon protocol topology trainer tests \( -name '*.cc' -o -name '*.h' -o -name '*.c' \))
if [ "${1:-}" = --fix ]; then
  clang-format -i --style=file "${files[@]}"
  exit 0
fi
if ! report=$(clang-format --style=file --dry-run --Werror "${files[@]}" 2>&1); then
  bad=$(grep -oE '^[^: ]+:[0-9]+:[0-9]+: (error|warning)' <<< "$report" | cut -d: -f1 | sort -u | tr '\n' ' ')
  echo "tests/format.sh: not formatted as .clang-format says: ${bad:-$report}" >&2
  echo "tests/format.sh: run tests/format.sh --fix" >&2
  exit 1
fi
echo "tests/format.sh: ${#files[@]} files formatted"
