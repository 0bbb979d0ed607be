#!/usr/bin/env bash
# Forward and backward per call at the GPU default case, every variant (dq, dk, dv checked against fp64).
# estimate: 90 s
set -u; D=$1
timeout 150 $ATTNSCOPE run --variants all --mode fwd_bwd --kernels --json "$D/fwd_bwd.json" >"$D/fwd_bwd.txt" 2>&1
