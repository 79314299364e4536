#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (AddressSanitizer and
# UndefinedBehaviorSanitizer on) in the sanitizer build tree
# (tests/sanitized_build.sh) and runs each for SECONDS (default 30), two at a
# time (one per core), from the seed corpus in tests/fuzz/corpus/. New inputs the fuzzer finds stay in
# <build>/fuzz-corpus/ (the committed seeds are not changed). A crash fails the run; its input is copied to
# tests/fuzz/regressions/<target>/, where the normal build's
# Fuzz.Replay.<target> test replays it from then on.
#
#   ./tests/fuzz/run.sh [SECONDS] [TARGET...]
#
# FUZZ_BUILD_DIR names a sanitizer tree already built (tests/run.sh: its
# stage 2's), so that nothing is configured or built; FUZZ_INPUT_TIMEOUT
# (default 10 s) bounds one input's run, in wall-clock seconds (tests/run.sh
# raises it: its fuzzers run at idle priority, where a busy core can hold one
# back).
set -euo pipefail
cd "$(dirname "$0")/../.."

secs="${1:-30}"
[[ "$secs" =~ ^[0-9]+$ ]] || { echo "tests/fuzz/run.sh: SECONDS '$secs' is not a number" >&2; exit 2; }
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(envelope membership state_download segment collective checkpoint data_wire sparse_files partition_text shard)

build="${FUZZ_BUILD_DIR:-$(tests/sanitized_build.sh address,undefined fuzzers | tail -n 1)}"
input_timeout="${FUZZ_INPUT_TIMEOUT:-10}"

export ASAN_OPTIONS="detect_leaks=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"

# One target for SECONDS; its summary line goes to $build/fuzz_T.result.
fuzz_one() {
  local t=$1 bin="$build/bin/fuzz_$1" work="$build/fuzz-corpus/$1" crashes="$build/fuzz-crashes/$1"
  local log="$build/fuzz_$1.log" result=ok
  mkdir -p "$work" "$crashes"
  cp -n tests/fuzz/corpus/"$t"/* "$work"/
  # One worker each: the target itself runs threads.
  if ! "$bin" -max_total_time="$secs" -timeout="$input_timeout" -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$crashes/" "$work" >"$log" 2>&1; then
    result=FAILED
    mkdir -p "tests/fuzz/regressions/$t"
    for f in "$crashes"/*; do
      [ -f "$f" ] || continue
      cp "$f" "tests/fuzz/regressions/$t/"
      echo "  crash input kept as tests/fuzz/regressions/$t/$(basename "$f")"
    done
    tail -n 40 "$log"
  fi
  local execs cov
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2)
  printf '%-15s %-6s %10s execs  coverage %s  corpus %s inputs\n' "$t" "$result" "${execs:-?}" \
    "${cov:-?}" "$(ls "$work" | wc -l)" >"$build/fuzz_$t.result"
}

for t in "${targets[@]}"; do
  [ -x "$build/bin/fuzz_$t" ] || { echo "tests/fuzz/run.sh: no target '$t'" >&2; exit 2; }
done
# Two targets at a time, one per core: SECONDS each, half the wall time.
for t in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge 2 ]; do wait -n || true; done
  echo "fuzzing $t for ${secs} s"
  rm -f "$build/fuzz_$t.result"
  fuzz_one "$t" &
done
wait
status=0
for t in "${targets[@]}"; do
  if [ -f "$build/fuzz_$t.result" ]; then cat "$build/fuzz_$t.result"; else echo "$t: no result" && status=1; fi
  grep -q ' FAILED ' "$build/fuzz_$t.result" 2>/dev/null && status=1
done
exit $status
