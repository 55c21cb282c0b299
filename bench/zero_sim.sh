# Sourced by bench/memory.sh and bench/soak.sh: starts `$BIN sim` with zero delays in the
# background, its output in DIR, and sets SIM_PID and url (the simulator's base URL); and
# writes their plan of 1-token streams of "hello" against it.
#   start_zero_sim DIR
#   one_token_plan FILE NAME LOAD      # LOAD: the [matrix] load table
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

one_token_plan() {
  cat >"$1" <<PLAN
[plan]
name = "$2"
seed = 1
[endpoints.sim]
base_url = "$url"
timeouts = { connect = "30s", read = "60s", total = "120s" }
[models.m]
served_name = "bench"
[datasets.hello]
kind = "prompt"
text = "hello"
[defaults]
output_tokens = 1
ignore_eos = true
stream = true
[matrix]
load = $3
PLAN
}
