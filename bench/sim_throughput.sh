#!/usr/bin/env bash
# Tokens/s the built-in simulator streams with zero delays, its server on one thread (one core).
# Release build; prints one line "sim throughput: ... tokens/s".
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --release --test sim_bench -- --ignored --nocapture 2>&1 | grep "sim throughput"
