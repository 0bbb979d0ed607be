#!/usr/bin/env bash
# Cold-L2 graph timing against an independent rotating-buffer replay (within 3%), warm/cold at decode KV 2k, 8k, 32k.
# estimate: 120 s
set -u; D=$1
timeout 170 python3 benchmarks/gpu/timing_truth.py "$D" >"$D/timing_truth.txt" 2>&1
