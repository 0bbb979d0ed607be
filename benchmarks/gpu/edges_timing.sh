#!/usr/bin/env bash
# Launch-bound timing, host time and copy-context traces (about 3-4 minutes on the H200).
# Writes $OUT/edges_timing.tgz:
#   graph_check.json/.txt  stream vs CUDA-graph device time vs triton do_bench_cudagraph, every variant,
#                          GPU default case and B1 H8 S512 D64 (benchmarks/gpu_graph_check.py)
#   host_timing.json/.txt  host time per call, single-call vs batched sampler, 5 rounds (benchmarks/gpu/host_timing.py)
#   traces/                copy-context traces (benchmarks/gpu/copy_traces.py)
#   run_small.json/.txt    attnscope run at B1 H8 S512 D64 (device time, stream time and launch gap per call)
# Run from the repository root: bash benchmarks/gpu/edges_timing.sh
set -u
W=/tmp/edges_timing; rm -rf $W; mkdir -p $W/traces
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 KINETO_LOG_LEVEL=6
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
t0=$(date +%s)
timeout 100 python3 benchmarks/gpu/copy_traces.py $W/traces > $W/copy_traces.txt 2>&1
echo "copy traces: rc=$? $(( $(date +%s) - t0 )) s, $(ls $W/traces | wc -l) files"
t0=$(date +%s)
timeout 200 python3 benchmarks/gpu_graph_check.py $W/graph_check.json > $W/graph_check.txt 2>&1
echo "graph check: rc=$? $(( $(date +%s) - t0 )) s"; cat $W/graph_check.txt | grep -v "^ " | cut -c1-150
t0=$(date +%s)
timeout 150 python3 benchmarks/gpu/host_timing.py $W/host_timing.json > $W/host_timing.txt 2>&1
echo "host timing: rc=$? $(( $(date +%s) - t0 )) s"; cat $W/host_timing.txt | cut -c1-150
t0=$(date +%s)
timeout 90 python3 -m attnscope.cli.main run --variants naive,sdpa_math,sdpa_efficient,sdpa_flash,sdpa_cudnn,sdpa_default,flex \
  --batch 1 --heads 8 --seq 512 --head-dim 64 --json $W/run_small.json > $W/run_small.txt 2>&1
echo "run small: rc=$? $(( $(date +%s) - t0 )) s"
tar czf "$OUT/edges_timing.tgz" -C /tmp edges_timing && ls -la "$OUT/edges_timing.tgz"
