#!/usr/bin/env bash
# Soak benchmark (issue 17): perfplan's memory over a long run at a fixed rate.
#
# Starts `perfplan sim` as a separate process (zero delays), runs one open-loop plan of
# 1-token streams at RATE requests/s for DURATION, samples the perfplan process's RSS
# (VmRSS of /proc/<pid>/status) every EVERY seconds, and prints: the samples as
# `seconds,rss_kib` (OUT/rss.csv), the peak, the RSS at the end of the first minute, and
# the least-squares slope of RSS after the first minute (KiB per minute): flat memory is
# a slope within noise.
#
#   bench/soak.sh                                   # 1,000 req/s for 30 minutes
#   RATE=200 DURATION=5m bench/soak.sh
#   BIN=path/to/perfplan bench/soak.sh              # that binary (no build)
#
# Needs: cargo, awk, Linux /proc. Results: target/bench-soak/ (OUT=DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/zero_sim.sh
source bench/zero_sim.sh

RATE=${RATE:-1000}
DURATION=${DURATION:-30m}
EVERY=${EVERY:-5}
OUT=${OUT:-target/bench-soak}
BIN=${BIN:-}
if [[ -z $BIN ]]; then
  BIN=target/release/perfplan
  cargo build --release --bin perfplan >&2
fi
rm -rf "$OUT" && mkdir -p "$OUT"

SIM_PID=""
RUN_PID=""
stop_all() {
  for pid in $RUN_PID $SIM_PID; do
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
}
trap stop_all EXIT

start_zero_sim "$OUT"
one_token_plan "$OUT/plan.toml" bench-soak "{ rate = $RATE, duration = \"$DURATION\", arrivals = \"constant\" }"
"$BIN" run "$OUT/plan.toml" --out "$OUT/out" >"$OUT/run.out" 2>"$OUT/run.err" &
RUN_PID=$!
start=$(date +%s)
echo "seconds,rss_kib" >"$OUT/rss.csv"
while kill -0 "$RUN_PID" 2>/dev/null; do
  rss=$(sed -n 's/^VmRSS:\s*\([0-9]*\) kB/\1/p' "/proc/$RUN_PID/status" 2>/dev/null || true)
  [[ -n $rss ]] && echo "$(( $(date +%s) - start )),$rss" >>"$OUT/rss.csv"
  sleep "$EVERY"
done
wait "$RUN_PID" || { echo "the run failed: $(tail -3 "$OUT/run.err")" >&2; exit 1; }
RUN_PID=""
tail -2 "$OUT/run.err"
awk -F, 'NR > 1 {
  if ($2 > peak) peak = $2
  if ($1 <= 60) first = $2
  else { n++; sx += $1; sy += $2; sxx += $1 * $1; sxy += $1 * $2; last = $2 }
}
END {
  slope = (n > 1) ? (n * sxy - sx * sy) / (n * sxx - sx * sx) * 60 : 0
  printf "samples %d, peak %.1f MiB, at 1 min %.1f MiB, at the end %.1f MiB, slope after 1 min %+.1f KiB/min\n",
    NR - 1, peak / 1024, first / 1024, last / 1024, slope
}' "$OUT/rss.csv"
