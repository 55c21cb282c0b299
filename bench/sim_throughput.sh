#!/usr/bin/env bash
# Tokens/s the built-in simulator streams with zero delays, its server on one thread (one core).
# Release build; prints "sim throughput: ... tokens/s" (zero delays, the book's "Measured" figure) and
# "sim paced: ..." (1,000 streams at 5 ms per token, one write per token).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --release --test sim_bench -- --ignored --nocapture 2>&1 | grep -E "^sim (throughput|paced)"
