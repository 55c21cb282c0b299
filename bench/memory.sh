#!/usr/bin/env bash
# Memory benchmark (issue 17): perfplan's peak RSS and requests/s as a run grows.
#
# For each request count in NS: starts `perfplan sim` as a separate process (zero delays),
# runs one plan of 1-token streams at concurrency 64 with that many requests under
# /usr/bin/time -v (peak RSS of the perfplan process, measured from outside), and prints
# one row per count: requests, peak RSS (MiB), wall seconds, requests/s.
#
#   bench/memory.sh                         # 20,000 and 200,000 requests, once each
#   NS="20000 200000 2000000" RUNS=3 bench/memory.sh
#   BIN=path/to/perfplan bench/memory.sh    # measure that binary (no build)
#
# Needs: cargo, GNU time (/usr/bin/time). Results: target/bench-memory/ (OUT=DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/zero_sim.sh
source bench/zero_sim.sh

NS=${NS:-"20000 200000"}
RUNS=${RUNS:-1}
OUT=${OUT:-target/bench-memory}
BIN=${BIN:-}
if [[ -z $BIN ]]; then
  BIN=target/release/perfplan
  cargo build --release --bin perfplan >&2
fi
mkdir -p "$OUT"

SIM_PID=""
stop_sim() {
  if [[ -n $SIM_PID ]]; then
    kill "$SIM_PID" 2>/dev/null || true
    wait "$SIM_PID" 2>/dev/null || true
    SIM_PID=""
  fi
}
trap stop_sim EXIT

printf "%10s %4s %14s %8s %12s\n" requests run "peak RSS MiB" "wall s" "requests/s"
for n in $NS; do
  for r in $(seq "$RUNS"); do
    dir="$OUT/n$n-r$r"
    rm -rf "$dir" && mkdir -p "$dir"
    start_zero_sim "$dir"
    one_token_plan "$dir/plan.toml" bench-memory "{ concurrency = 64, requests = $n, warmup = 64 }"
    /usr/bin/time -v "$BIN" run "$dir/plan.toml" --out "$dir/out" >"$dir/run.out" 2>"$dir/run.err" || true
    stop_sim
    rss=$(sed -n 's/^\s*Maximum resident set size (kbytes): //p' "$dir/run.err")
    wall=$(sed -n 's/^\s*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$dir/run.err" |
      awk -F: '{ if (NF == 3) print $1*3600 + $2*60 + $3; else print $1*60 + $2 }')
    awk -v n="$n" -v r="$r" -v rss="$rss" -v wall="$wall" \
      'BEGIN { printf "%10d %4d %14.1f %8.1f %12.0f\n", n, r, rss / 1024, wall, n / wall }'
  done
done
