# Sourced by bench/memory.sh and bench/soak.sh: starts `$BIN sim` with zero delays in the
# background, its output in DIR, and sets SIM_PID and url (the simulator's base URL).
#   start_zero_sim DIR
start_zero_sim() {
  local dir=$1
  "$BIN" sim --port 0 --ttft-base 0ms --itl-base 0ms --max-num-seqs 8192 >"$dir/sim.out" 2>"$dir/sim.err" &
  SIM_PID=$!
  url=""
  for _ in $(seq 100); do
    url=$(sed -n 's/^listening on //p' "$dir/sim.out" 2>/dev/null || true)
    [[ -n $url ]] && return 0
    sleep 0.1
  done
  echo "simulator did not start: $(cat "$dir/sim.err")" >&2
  exit 1
}
