#!/usr/bin/env bash
# Each built-in mask (document, sliding, prefix) against its other formulations, compiled flex at B2 H16 S4096 D64 bf16.
# estimate: 90 s
set -u; D=$1
timeout 240 python3 benchmarks/gpu/mask_formulations.py "$D/mask_formulations.json" >"$D/mask_formulations.txt" 2>&1
