#!/usr/bin/env bash
# Host time per call: the batched sampler's stability (nine interleaved rounds) and the tool's sampler against a bare script.
# estimate: 200 s
set -u; D=$1
timeout 150 python3 benchmarks/gpu/host_timing.py "$D/host_timing.json" >"$D/host_timing.txt" 2>&1
timeout 60 python3 benchmarks/gpu/host_diag.py >"$D/host_diag.txt" 2>&1
exit 0
