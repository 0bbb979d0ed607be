#!/usr/bin/env bash
# What SDPA runs for is_causal and the CausalBias masks (lower-right, upper-left) at decode, chunked prefill and prefill, per backend: kernels and µs.
# estimate: 40 s
set -u; D=$1
timeout 200 python3 benchmarks/gpu/causal_bias.py "$D/causal_bias.json" >"$D/causal_bias.txt" 2>&1
