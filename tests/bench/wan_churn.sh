#!/usr/bin/env bash
# Churn on the WAN (issue 77's soak): `gossipctl soak --netns --preset wan`
# with MEMBERS members (32) of Crossover-SGD (--compress COMPRESS, int8: in
# float32 the preset's 10 mbit hosts fall behind at a 500 ms deadline and
# are evicted, tests/bench/README.md) on --preset wan's links, one
# killed and one new joining every EVERY_S (20) seconds, for as long as
# EPOCHS (30: about 10 minutes here) take; then the same cluster without
# churn, for the accuracy to hold it to. Prints both reports. Root (the
# network namespaces).
# Usage: tests/bench/wan_churn.sh [OUT=/tmp/gossipd_wan_churn]
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:-/tmp/gossipd_wan_churn}
MEMBERS=${MEMBERS:-32}; EVERY_S=${EVERY_S:-20}; EPOCHS=${EPOCHS:-30}; ALGO=${ALGO:-crossover}
COMPRESS=${COMPRESS:-int8}
cmake --build build -j2 --target gossipd gossipctl >/dev/null
common=(--netns --preset wan --workers "$MEMBERS" --algos "$ALGO" --epochs "$EPOCHS" --test-limit 2000
        --segment-deadline-ms 500 --compress "$COMPRESS")
./build/bin/gossipctl soak "${common[@]}" --churn-every-s "$EVERY_S" --churn-events $((600 / EVERY_S)) \
  --out "$OUT/churn" > "$OUT.churn.log" 2>&1 || { echo "soak failed: $(tail -3 "$OUT.churn.log")"; exit 1; }
./build/bin/gossipctl soak "${common[@]}" --churn-every-s 0 --out "$OUT/none" > "$OUT.none.log" 2>&1 ||
  { echo "soak failed: $(tail -3 "$OUT.none.log")"; exit 1; }
cat "$OUT/churn/report.md" "$OUT/none/report.md"
