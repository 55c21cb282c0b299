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
#   SIM_BIN=path/to/perfplan ...          # serve with that binary's simulator (default: BIN's)
#   TLS=1 SCENARIOS="ttft-c64 ttft-c256" bench/client.sh   # HTTPS against HTTP (issue 34)
#   BUSY=1 ...                            # a competing CPU load on the client's core(s)
#                                         # during every run (a busy loop; with PIN=1 on CPU 1)
#
# Every run's table also gives the TTFT error by the kernel's receive stamps (the default
# clock) and by the client's reads (the same requests: each one's stamp plus how long after
# it the client read; `figures.py kernel`), paired request by request.
#
# TLS=1: every run of a scenario is made twice, interleaved (http, https, http, ...): once
# over plain HTTP, once over HTTPS, the simulator serving TLS (`perfplan sim --tls-cert
# --tls-key`) with a self-signed P-256 certificate for 127.0.0.1 made at start with openssl
# (OUT/tls/), trusted by the plan through `tls.ca_file`. HTTPS runs write
# OUT/SCENARIO-https.jsonl beside OUT/SCENARIO.jsonl; the HTTPS table (figures.py tls)
# follows the usual one.
#
# Needs: cargo, python3 (standard library), curl, GNU time (/usr/bin/time); openssl for TLS=1.
# Results: target/bench-client/ (OUT=DIR to change); load average is printed per run.
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-3}
SCENARIOS=${SCENARIOS:-"rps-1tok tokens-512 ttft-c64 ttft-c256 ttft-c1024 poisson-50"}
OUT=${OUT:-target/bench-client}
BIN=${BIN:-}
TLS=${TLS:-0}
MODES="http"
if [[ $TLS == 1 ]]; then MODES="http https"; fi

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

make_cert() { # a self-signed certificate for 127.0.0.1 in $OUT/tls
  mkdir -p "$OUT/tls"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 -addext basicConstraints=critical,CA:FALSE \
    -keyout "$OUT/tls/key.pem" -out "$OUT/tls/cert.pem" 2>/dev/null
}

start_sim() { # scenario dir mode -> sets SIM_URL
  local tls_flags=()
  if [[ $3 == https ]]; then tls_flags=(--tls-cert "$OUT/tls/cert.pem" --tls-key "$OUT/tls/key.pem"); fi
  # shellcheck disable=SC2046
  "${pin_sim[@]}" "${SIM_BIN:-$BIN}" sim --port 0 $(sim_flags "$1") "${tls_flags[@]}" ${SIM_EXTRA:-} >"$2/sim.out" 2>"$2/sim.err" &
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

suffix() { if [[ $1 == https ]]; then echo "-https"; fi; }

run_one() { # scenario run mode: one run, its figures appended to OUT/SCENARIO[-https].jsonl
  local s=$1 i=$2 mode=$3 tag dir tls_set=() curl_tls=()
  tag="$s$(suffix "$mode")"
  dir="$OUT/$tag-$i"
  rm -rf "$dir" && mkdir -p "$dir"
  start_sim "$s" "$dir" "$mode"
  if [[ $mode == https ]]; then
    tls_set=(--set "endpoints.sim.tls={ ca_file = \"$(cd "$OUT/tls" && pwd)/cert.pem\" }")
    curl_tls=(--cacert "$OUT/tls/cert.pem")
  fi
  load0=$(cut -d' ' -f1 /proc/loadavg)
  local busy_pid=""
  if [[ ${BUSY:-0} == 1 ]]; then
    "${pin_client[@]}" timeout 600 sh -c 'while :; do :; done' &
    busy_pid=$!
  fi
  status=0
  "${pin_client[@]}" /usr/bin/time -v -o "$dir/time.txt" "$BIN" run "bench/$s.toml" \
    --out "$dir/out" --set "endpoints.sim.base_url=$SIM_URL" "${tls_set[@]}" ${RUN_EXTRA:-} >"$dir/run.log" 2>&1 || status=$?
  load1=$(cut -d' ' -f1 /proc/loadavg)
  if [[ -n $busy_pid ]]; then kill "$busy_pid" 2>/dev/null || true; wait "$busy_pid" 2>/dev/null || true; fi
  curl -sf "${curl_tls[@]}" "$SIM_URL/sim/truth" >"$dir/truth.json"
  sim_cpu=$(sim_cpu_s)
  stop_sim
  if [[ $status -ne 0 && $status -ne 1 ]]; then
    echo "$tag run $i: perfplan exited $status (see $dir/run.log)" >&2
    return 0
  fi
  line=$(python3 bench/figures.py run "$dir/out/results.db" "$dir/truth.json" "$dir/time.txt")
  line=${line%\}}", \"sim_cpu_s\": $sim_cpu, \"load_before\": $load0, \"load_after\": $load1}"
  echo "$line" >>"$OUT/$tag.jsonl"
  echo "$tag run $i: $line" >&2
}

if [[ -z $BIN ]]; then
  BIN=target/release/perfplan
  cargo build --release --bin perfplan >&2
fi
mkdir -p "$OUT"
if [[ $TLS == 1 ]]; then make_cert; fi
echo "machine: $(nproc) CPUs, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)" | tee "$OUT/machine.txt"
for s in $SCENARIOS; do
  for mode in $MODES; do : >"$OUT/$s$(suffix "$mode").jsonl"; done
  for i in $(seq "$RUNS"); do
    for mode in $MODES; do
      run_one "$s" "$i" "$mode"
    done
  done
done
echo
python3 bench/figures.py table "$OUT"
if [[ $TLS == 1 ]]; then echo; python3 bench/figures.py tls "$OUT"; fi
echo; python3 bench/figures.py kernel "$OUT"
echo "load average now: $(cut -d' ' -f1-3 /proc/loadavg) (other processes share this machine)"
