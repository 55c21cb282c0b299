#!/usr/bin/env bash
# Telemetry's cost in client CPU (issue 19): the same load against a separate simulator
# process, with telemetry scraping its /metrics every second and with telemetry off,
# interleaved (off, on, off, on, ...) so drift in the machine's load hits both alike.
# Client CPU is the whole perfplan process's user + system time from GNU time (the
# sampler thread included), and the run's `client_cpu_ratio`.
#
#   bench/telemetry_cpu.sh                 # 4 pairs
#   REPEATS=2 bench/telemetry_cpu.sh
#   BIN=path/to/perfplan bench/telemetry_cpu.sh
#
# Needs: cargo, curl, python3, GNU time (/usr/bin/time). Results: target/bench-telemetry/.
set -euo pipefail
cd "$(dirname "$0")/.."

REPEATS=${REPEATS:-4}
OUT=${OUT:-target/bench-telemetry}
BIN=${BIN:-}
if [[ -z $BIN ]]; then
  cargo build --release --quiet
  BIN=target/release/perfplan
fi
mkdir -p "$OUT"

SIM_PID=""
stop_sim() { if [[ -n $SIM_PID ]]; then kill "$SIM_PID" 2>/dev/null || true; wait "$SIM_PID" 2>/dev/null || true; SIM_PID=""; fi; }
trap stop_sim EXIT

"$BIN" sim --port 0 --ttft-base 20ms --itl-base 5ms --max-num-seqs 8192 --threads 1 >"$OUT/sim.out" 2>"$OUT/sim.err" &
SIM_PID=$!
for _ in $(seq 1 100); do
  URL=$(grep -o 'http://127.0.0.1:[0-9]*' "$OUT/sim.out" | head -1 || true)
  [[ -n $URL ]] && curl -sf "$URL/v1/models" >/dev/null && break
  sleep 0.1
done
[[ -n $URL ]] || { echo "simulator did not start" >&2; exit 1; }

printf "%-4s %-3s %8s %8s %8s %9s %8s\n" mode rep user_s sys_s cpu_s cpu_ratio scrapes
for rep in $(seq 1 "$REPEATS"); do
  for mode in off on; do
    dir="$OUT/$mode-$rep"
    rm -rf "$dir"
    enabled=$([[ $mode == on ]] && echo true || echo false)
    /usr/bin/time -v -o "$dir.time" "$BIN" run bench/telemetry-cpu.toml --out "$dir" \
      --set "endpoints.sim.base_url=$URL" --set "endpoints.sim.telemetry.enabled=$enabled" \
      >/dev/null 2>"$dir.err"
    user=$(awk -F': ' '/User time/ {print $2}' "$dir.time")
    sys=$(awk -F': ' '/System time/ {print $2}' "$dir.time")
    python3 - "$dir/results.db" "$mode" "$rep" "$user" "$sys" <<'PY'
import sqlite3, sys
db, mode, rep, user, sys_s = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), float(sys.argv[5])
c = sqlite3.connect(db)
ratio = c.execute("SELECT value FROM run_metrics WHERE name = 'client_cpu_ratio'").fetchone()[0]
scrapes = c.execute("SELECT COUNT(DISTINCT t_ms) FROM telemetry").fetchone()[0]
print(f"{mode:<4} {rep:<3} {user:8.2f} {sys_s:8.2f} {user + sys_s:8.2f} {ratio:9.4f} {scrapes:8d}")
PY
  done
done
