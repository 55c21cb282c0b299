#!/usr/bin/env bash
# Issue 34, against a real server: perfplan's TTFT next to vLLM's own TTFT histogram, over
# plain HTTP and over HTTPS through a local TLS terminator (bench/tls_front.py, a
# self-signed certificate made at start). Needs a vLLM server already answering at
# $VLLM (default http://127.0.0.1:18020; /work/shared/tools/vllm starts one): this script
# neither starts nor stops it, and sends it 2 runs x 22 streamed requests plus the
# connection tests and a few /metrics scrapes.
#
#   bench/vllm_tls.sh            # after `cargo build --release`
#   BIN=path/to/perfplan bench/vllm_tls.sh
#
# Needs: python3 (standard library), openssl, curl. Results: target/bench-vllm-tls/.
set -euo pipefail
cd "$(dirname "$0")/.."

VLLM=${VLLM:-http://127.0.0.1:18020}
OUT=${OUT:-target/bench-vllm-tls}
BIN=${BIN:-target/release/perfplan}
PORT=${VLLM##*:}

if ! curl -sf -m 5 "$VLLM/v1/models" >/dev/null; then
  echo "no vLLM server answers at $VLLM/v1/models: nothing measured" >&2
  exit 0
fi
rm -rf "$OUT" && mkdir -p "$OUT"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
  -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 -addext basicConstraints=critical,CA:FALSE \
  -keyout "$OUT/key.pem" -out "$OUT/cert.pem" 2>/dev/null
python3 bench/tls_front.py "$OUT/cert.pem" "$OUT/key.pem" "$PORT" >"$OUT/front.out" 2>"$OUT/front.err" &
FRONT_PID=$!
trap 'kill "$FRONT_PID" 2>/dev/null || true; wait "$FRONT_PID" 2>/dev/null || true' EXIT
for _ in $(seq 50); do
  HTTPS_URL=$(sed -n 's/^listening on //p' "$OUT/front.out" 2>/dev/null || true)
  [[ -n $HTTPS_URL ]] && break
  sleep 0.1
done
[[ -n ${HTTPS_URL:-} ]] || { echo "the TLS front did not start: $(cat "$OUT/front.err")" >&2; exit 1; }

ca="$(cd "$OUT" && pwd)/cert.pem"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
"$BIN" run bench/vllm-tls.toml --out "$OUT/http" --set "endpoints.vllm.base_url=$VLLM" >"$OUT/http.log" 2>&1
"$BIN" run bench/vllm-tls.toml --out "$OUT/https" --set "endpoints.vllm.base_url=$HTTPS_URL" \
  --set "endpoints.vllm.tls={ ca_file = \"$ca\" }" >"$OUT/https.log" 2>&1
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
for mode in http https; do
  echo "== $mode"
  python3 bench/figures.py buckets "$OUT/$mode/results.db"
done
