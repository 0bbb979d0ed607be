#!/usr/bin/env bash
# Nsight Compute: attnscope run --ncu on the fused variants, then the tensor-pipe counters of every kernel kind.
# estimate: 420 s
set -u; D=$1; T=$(mktemp -d)
timeout 150 $ATTNSCOPE run --variants sdpa_flash,sdpa_cudnn,sdpa_efficient,flex_compiled --ncu --kernels --no-peak \
  --json "$D/run_ncu.json" >"$D/run_ncu.txt" 2>&1
OUT=$T timeout 260 bash benchmarks/gpu/ncu_tc.sh
tar xzf "$T/ncu_tc.tgz" -C "$D" 2>/dev/null
exit 0
