#!/usr/bin/env bash
# Decode B8 H32 KV8 Sk8192 D128: each backend × (enable_gqa | query heads packed into the query length | KV cache stored [B,S,H,D]), by CUDA events, graph replay and do_bench; read-bandwidth probes.
# estimate: 60 s
set -u; D=$1
timeout 240 python3 benchmarks/gpu/decode_layouts.py "$D/decode_layouts.json" >"$D/decode_layouts.txt" 2>&1
