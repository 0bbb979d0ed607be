#!/usr/bin/env bash
# Second batch (about 5 minutes on the H200): attnscope run --ncu (deep mode) on the fused variants at the
# GPU default case; host-time samplers side by side at the default case (benchmarks/gpu/host_timing2.py);
# the tensor-pipe pass for what the first ran out of time for (bash benchmarks/gpu/ncu_tc.sh rest).
# Writes $OUT/edges2.tgz: run_ncu.json/.txt, host_timing2.json/.txt, ncu_tc_rest.tgz.
# Run from the repository root: bash benchmarks/gpu/edges2.sh
set -u
W=/tmp/edges2; rm -rf $W; mkdir -p $W
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 KINETO_LOG_LEVEL=6
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
t0=$(date +%s)
timeout 150 python3 -m attnscope.cli.main run --variants sdpa_flash,sdpa_cudnn,sdpa_efficient,flex_compiled --ncu \
  --kernels --no-peak --json $W/run_ncu.json > $W/run_ncu.txt 2>&1
echo "run --ncu: rc=$? $(( $(date +%s) - t0 )) s"; grep -E "Nsight|ncu|achieved" $W/run_ncu.txt | cut -c1-220 | head -12
t0=$(date +%s)
timeout 150 python3 benchmarks/gpu/host_timing2.py $W/host_timing2.json > $W/host_timing2.txt 2>&1
echo "host timing 2: rc=$? $(( $(date +%s) - t0 )) s"; cut -c1-200 $W/host_timing2.txt
OUT=$W timeout 200 bash benchmarks/gpu/ncu_tc.sh rest > $W/ncu_tc_rest.log 2>&1
echo "ncu rest: rc=$?"; tail -4 $W/ncu_tc_rest.log
tar czf "$OUT/edges2.tgz" -C /tmp edges2 && ls -la "$OUT/edges2.tgz"
