#!/usr/bin/env bash
# A launch-bound case (B1 H8 S512 D64): device time, stream time and launch gap per call, host time.
# estimate: 60 s
set -u; D=$1
timeout 120 $ATTNSCOPE run --variants all --batch 1 --heads 8 --seq 512 --head-dim 64 --kernels \
  --json "$D/small.json" >"$D/small.txt" 2>&1
