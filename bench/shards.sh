#!/usr/bin/env bash
# Sharding exactness (issue 18): does a suite split over 4 shards of 64 streams each,
# merged, measure what one process at 256 streams measures against the same server?
#
# Builds the release binary, starts `perfplan sim` as a separate process (one thread,
# 50 ms TTFT, 10 ms ITL), runs bench/shards-c256.toml once as one process and once as 4
# shards on this machine (`--shard K/4`, start barrier on 127.0.0.1, `--merge`), each
# against a fresh simulator, then prints per run: requests (must be equal), TTFT p50/p90/
# p99 and TPOT mean/p99 of both and their difference, the client CPU (the one process's,
# the busiest shard's), the shards' start spread and each shard's client. ROUNDS=N
# repeats the pair (default 1).
#
#   bench/shards.sh
#   BIN=target/release/perfplan bench/shards.sh   # no build
#
# Needs: cargo, python3 (standard library). Figures come from `perfplan report --format
# json` and the merging shard's log. Results: target/bench-shards/ (OUT=DIR to change).
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${OUT:-target/bench-shards}
BIN=${BIN:-}
ROUNDS=${ROUNDS:-1}
PLAN=bench/shards-c256.toml
SIM_FLAGS="--ttft-base 50ms --itl-base 10ms --max-num-seqs 8192 --threads 1"

if [[ -z $BIN ]]; then
  cargo build --release --bin perfplan >&2
  BIN=target/release/perfplan
fi
rm -rf "$OUT"
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

# Starts a fresh simulator; sets SIM_URL.
start_sim() {
  stop_sim
  # shellcheck disable=SC2086
  "$BIN" sim --port 0 $SIM_FLAGS >"$OUT/sim.log" 2>&1 &
  SIM_PID=$!
  for _ in $(seq 100); do
    SIM_URL=$(grep -o 'http://[0-9.:]*' "$OUT/sim.log" | head -1 || true)
    [[ -n $SIM_URL ]] && return
    sleep 0.1
  done
  echo "the simulator did not start" >&2
  exit 1
}

for round in $(seq "$ROUNDS"); do
  dir="$OUT/round-$round"
  start_sim
  "$BIN" run "$PLAN" --set "endpoints.sim.base_url=$SIM_URL" --out "$dir/one" \
    >"$dir-one.log" 2>&1 || { cat "$dir-one.log" >&2; exit 1; }
  start_sim
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  pids=()
  for k in 1 2 3 4; do
    "$BIN" run "$PLAN" --set "endpoints.sim.base_url=$SIM_URL" --out "$dir/shards" \
      --shard "$k/4" --barrier "127.0.0.1:$port" --merge >"$dir-shard-$k.log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || { cat "$dir"-shard-*.log >&2; exit 1; }; done
  stop_sim
  "$BIN" report "$dir/one" --format json >"$dir/one.json"
  "$BIN" report "$dir/shards/merged" --format json >"$dir/merged.json"
  grep -h -E '^  #[0-9]+ [0-9a-f]+: (shards: started within|client by shard)' "$dir-shard-1.log" \
    | sed "s/^/round $round: /" || true
  python3 - "$dir/one.json" "$dir/merged.json" "$round" <<'PY'
import json, sys
one, merged, rnd = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
cols = ["requests_ok", "ttft_p50", "ttft_p90", "ttft_p99", "tpot_mean", "tpot_p99", "client_cpu_ratio"]
print(f"round {rnd}: run | " + " | ".join(f"{c} one / 4 shards (diff)" for c in cols))
for a, b in zip(one, merged):
    cells = []
    for c in cols:
        x, y = a["metrics"].get(c), b["metrics"].get(c)
        if x is None or y is None:
            cells.append("—")
        elif c == "requests_ok":
            cells.append(f"{x:.0f} / {y:.0f} ({'equal' if x == y else 'DIFFER'})")
        else:
            cells.append(f"{x:.2f} / {y:.2f} ({(y - x) / x * 100:+.1f}%)")
    print(f"round {rnd}: #{a['ordinal']} | " + " | ".join(cells))
PY
done
