#!/usr/bin/env bash
# The HTTP/1 client A/B (issue 16, item 6): bench/client.sh's rows with the lean client
# (`h1`, the default) and with hyper's connection API (PERFPLAN_HTTP1_CLIENT=hyper), the
# same release binary. Runs are interleaved per scenario (h1, hyper, h1, hyper, ...) so
# that whatever else loads the machine hits both clients alike; then each client's table,
# medians of ROUNDS runs (min..max as the noise).
#
#   bench/client_ab.sh                         # every row, 3 rounds
#   ROUNDS=1 SCENARIOS="tokens-512" bench/client_ab.sh
#   BIN=path/to/perfplan bench/client_ab.sh    # that binary, no build
#
# Results: target/bench-ab/{h1,hyper}/ (OUT=DIR to change), one bench/client.sh folder per run.
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-3}
SCENARIOS=${SCENARIOS:-"rps-1tok tokens-512 ttft-c64 ttft-c256 ttft-c1024 ttft-c256-cold poisson-50"}
OUT=${OUT:-target/bench-ab}
BIN=${BIN:-}

if [[ -z $BIN ]]; then
  BIN=target/release/perfplan
  cargo build --release --bin perfplan >&2
fi
clients="h1 hyper"
for c in $clients; do
  rm -rf "${OUT:?}/$c" && mkdir -p "$OUT/$c/all"
done
for i in $(seq "$ROUNDS"); do
  for s in $SCENARIOS; do
    for c in $clients; do
      dir="$OUT/$c/$s-$i"
      echo "round $i, $s, $c: load $(cut -d' ' -f1 /proc/loadavg)" >&2
      PERFPLAN_HTTP1_CLIENT=$c BIN=$BIN RUNS=1 SCENARIOS=$s OUT=$dir bench/client.sh >"$dir.log" 2>&1 ||
        { echo "$s, $c: bench/client.sh failed (see $dir.log)" >&2; exit 1; }
      cat "$dir/$s.jsonl" >>"$OUT/$c/all/$s.jsonl"
    done
  done
done
cp "$OUT/h1/$s-1/machine.txt" "$OUT/machine.txt"
for c in $clients; do
  echo
  echo "## $c"
  python3 bench/figures.py table "$OUT/$c/all"
done
echo "load average now: $(cut -d' ' -f1-3 /proc/loadavg) (other processes share this machine)"
