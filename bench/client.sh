#!/usr/bin/env bash
# Client benchmark (issue 9): how fast and how accurate perfplan is as a client.
#
# Builds release binaries, then for each scenario (plans in bench/*.toml) and each of RUNS
# runs: starts `perfplan sim` as a separate process (fresh, truth on), runs
# `perfplan run bench/SCENARIO.toml` against it under /usr/bin/time -v (CPU time and peak
# memory of the whole perfplan process, measured from outside), fetches the simulator's
# truth, joins it with perfplan's records by request id (bench/figures.py) and finally
# prints the issue's table: medians of the runs, min-max as the noise.
#
#   bench/client.sh                       # every scenario, 3 runs each
#   RUNS=1 SCENARIOS="ttft-c256" bench/client.sh
#   PIN=1 bench/client.sh                 # sim on CPU 0, perfplan on CPU 1 (taskset)
#   SIM_EXTRA="--threads 2" bench/client.sh   # extra simulator flags for every scenario
#   RUN_EXTRA="--progress-every 1s" bench/client.sh   # extra `perfplan run` flags
#   BIN=path/to/perfplan bench/client.sh  # measure that binary (no build), e.g. an older one
#
# Needs: cargo, python3 (standard library), curl, GNU time (/usr/bin/time).
# Results: target/bench-client/ (OUT=DIR to change); load average is printed per run.
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-3}
SCENARIOS=${SCENARIOS:-"rps-1tok tokens-512 ttft-c64 ttft-c256 ttft-c1024 poisson-50"}
OUT=${OUT:-target/bench-client}
BIN=${BIN:-}

# Simulator settings per scenario: zero delays and all worker threads for throughput; for
# TTFT error a pacing the simulator (sharing the 2 cores) can serve on time, on one thread
# (`--threads 1`: no hand-offs between its own workers), so the figure is the client's error
# and not the simulator's own queueing before it stamps a request's arrival or after it
# stamps a first token. SIM_EXTRA="..." adds simulator flags to every scenario (e.g.
# SIM_EXTRA="--threads 2" to see the multi-threaded simulator's figures).
sim_flags() {
  case $1 in
    rps-1tok|tokens-512|mix-1tok) echo "--ttft-base 0ms --itl-base 0ms --max-num-seqs 8192" ;;
    ttft-c64|poisson-50) echo "--ttft-base 20ms --itl-base 5ms --max-num-seqs 8192 --threads 1" ;;
    ttft-c256|ttft-c256-cold) echo "--ttft-base 50ms --itl-base 10ms --max-num-seqs 8192 --threads 1" ;;
    ttft-c1024) echo "--ttft-base 500ms --itl-base 50ms --max-num-seqs 8192 --threads 1" ;;
    ttft-c4096) echo "--ttft-base 1s --itl-base 100ms --max-num-seqs 8192 --threads 1" ;;
    *) echo "--max-num-seqs 8192" ;;
  esac
}

pin_sim=() pin_client=()
if [[ ${PIN:-0} == 1 ]]; then pin_sim=(taskset -c 0) pin_client=(taskset -c 1); fi

SIM_PID=""
stop_sim() {
  if [[ -n $SIM_PID ]]; then
    kill "$SIM_PID" 2>/dev/null || true
    wait "$SIM_PID" 2>/dev/null || true
    SIM_PID=""
  fi
}
trap stop_sim EXIT

start_sim() { # scenario dir -> sets SIM_URL
  # shellcheck disable=SC2046
  "${pin_sim[@]}" "$BIN" sim --port 0 $(sim_flags "$1") ${SIM_EXTRA:-} >"$2/sim.out" 2>"$2/sim.err" &
  SIM_PID=$!
  for _ in $(seq 100); do
    SIM_URL=$(sed -n 's/^listening on //p' "$2/sim.out" 2>/dev/null || true)
    [[ -n $SIM_URL ]] && return 0
    sleep 0.1
  done
  echo "simulator did not start: $(cat "$2/sim.err")" >&2
  exit 1
}

sim_cpu_s() { # user+system seconds of the simulator so far
  awk -v hz="$(getconf CLK_TCK)" '{print ($14+$15)/hz}' "/proc/$SIM_PID/stat"
}

if [[ -z $BIN ]]; then
  BIN=target/release/perfplan
  cargo build --release --bin perfplan >&2
fi
mkdir -p "$OUT"
echo "machine: $(nproc) CPUs, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)" | tee "$OUT/machine.txt"
for s in $SCENARIOS; do
  : >"$OUT/$s.jsonl"
  for i in $(seq "$RUNS"); do
    dir="$OUT/$s-$i"
    rm -rf "$dir" && mkdir -p "$dir"
    start_sim "$s" "$dir"
    load0=$(cut -d' ' -f1 /proc/loadavg)
    status=0
    "${pin_client[@]}" /usr/bin/time -v -o "$dir/time.txt" "$BIN" run "bench/$s.toml" \
      --out "$dir/out" --set "endpoints.sim.base_url=$SIM_URL" ${RUN_EXTRA:-} >"$dir/run.log" 2>&1 || status=$?
    load1=$(cut -d' ' -f1 /proc/loadavg)
    curl -sf "$SIM_URL/sim/truth" >"$dir/truth.json"
    sim_cpu=$(sim_cpu_s)
    stop_sim
    if [[ $status -ne 0 && $status -ne 1 ]]; then
      echo "$s run $i: perfplan exited $status (see $dir/run.log)" >&2
      continue
    fi
    line=$(python3 bench/figures.py run "$dir/out/results.db" "$dir/truth.json" "$dir/time.txt")
    line=${line%\}}", \"sim_cpu_s\": $sim_cpu, \"load_before\": $load0, \"load_after\": $load1}"
    echo "$line" >>"$OUT/$s.jsonl"
    echo "$s run $i: $line" >&2
  done
done
echo
python3 bench/figures.py table "$OUT"
echo "load average now: $(cut -d' ' -f1-3 /proc/loadavg) (other processes share this machine)"
