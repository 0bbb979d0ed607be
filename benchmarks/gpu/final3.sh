#!/usr/bin/env bash
# With CUPTI torn down after each capture (about 2 minutes on the H200): attnscope run at the GPU
# default case with every built-in variant and at B1 H8 S512 D64 with the fused ones, so the tool's own
# CPU µs can be set beside the bare probe's (host_timing3.py); and the diagnosis once more.
# Writes $OUT/final3.tgz.  Run from the repository root: bash benchmarks/gpu/final3.sh
set -u
W=/tmp/final3; rm -rf $W; mkdir -p $W
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 KINETO_LOG_LEVEL=6
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import sys, torch; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())"; date -u; } > $W/env.txt 2>&1
timeout 150 python3 -m attnscope.cli.main run --variants all --json $W/run_default.json > $W/run_default.txt 2>&1
echo "run default: rc=$?"; grep -E "^│ [a-z]" $W/run_default.txt | grep -v skipped | cut -c1-150
timeout 90 python3 -m attnscope.cli.main run --batch 1 --heads 8 --seq 512 --head-dim 64 \
  --variants sdpa_flash,sdpa_cudnn,sdpa_efficient,sdpa_default --json $W/run_small.json > $W/run_small.txt 2>&1
echo "run small: rc=$?"; grep -E "^│ sdpa" $W/run_small.txt | cut -c1-150
timeout 100 python3 benchmarks/gpu/host_diag.py > $W/host_diag.txt 2>&1; echo "diag: rc=$?"; grep -v Warning $W/host_diag.txt
tar czf "$OUT/final3.tgz" -C /tmp final3 && ls -la "$OUT/final3.tgz"
