#!/usr/bin/env bash
# After the batch sizing fix (about 4 minutes on the H200): the host-time samplers again (host_timing3.py,
# now with samples of ~1 ms and ~5 ms of back-to-back calls), then attnscope run at the GPU default case
# (every built-in variant; its CPU µs column is the tool's sampler) and at B1 H8 S512 D64 (the fused
# backends, with their kernels: does flash split the KV there?).  Writes $OUT/final2.tgz.
# Run from the repository root: bash benchmarks/gpu/final2.sh
set -u
W=/tmp/final2; rm -rf $W; mkdir -p $W
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 KINETO_LOG_LEVEL=6
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import sys, torch; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())"; date -u; } > $W/env.txt 2>&1
cat $W/env.txt
t0=$(date +%s)
timeout 220 python3 benchmarks/gpu/host_timing3.py $W/host_timing3.json > $W/host_timing3.txt 2>&1
echo "host timing 3: rc=$? $(( $(date +%s) - t0 )) s"; cut -c1-200 $W/host_timing3.txt | grep -E "tool|b1ms_spin_last|b5ms|cuDNN/flash"
t0=$(date +%s)
timeout 150 python3 -m attnscope.cli.main run --json $W/run_default.json > $W/run_default.txt 2>&1
echo "run default: rc=$? $(( $(date +%s) - t0 )) s"; grep -E "^│" $W/run_default.txt | cut -c1-160
timeout 90 python3 -m attnscope.cli.main run --batch 1 --heads 8 --seq 512 --head-dim 64 \
  --variants sdpa_flash,sdpa_cudnn,sdpa_efficient --kernels --json $W/run_small.json > $W/run_small.txt 2>&1
echo "run small: rc=$?"; grep -E "^│ (sdpa|[0-9])" $W/run_small.txt | cut -c1-160
tar czf "$OUT/final2.tgz" -C /tmp final2 && ls -la "$OUT/final2.tgz"
