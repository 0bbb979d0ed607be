#!/usr/bin/env bash
# The last batch of this round on the H200 (about 6 minutes): the host-time samplers side by side
# (host_timing3.py), then attnscope run --ncu with every variant at the GPU default case (the deep mode end
# to end with a measured peak, the counters deciding tensor cores), and run --ncu in fp32 on the variants
# whose fp32 kernels the name table cannot settle (compiled flex: no MMA by counters).
# Writes $OUT/final.tgz.  Run from the repository root: bash benchmarks/gpu/final.sh
set -u
W=/tmp/final; rm -rf $W; mkdir -p $W
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 KINETO_LOG_LEVEL=6
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; ncu --version | tail -1
  python3 -c "import sys, torch; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())"; date -u; } > $W/env.txt 2>&1
cat $W/env.txt
t0=$(date +%s)
timeout 200 python3 benchmarks/gpu/host_timing3.py $W/host_timing3.json > $W/host_timing3.txt 2>&1
echo "host timing 3: rc=$? $(( $(date +%s) - t0 )) s"; cut -c1-230 $W/host_timing3.txt
t0=$(date +%s)
timeout 260 python3 -m attnscope.cli.main run --variants all --ncu --kernels --json $W/run_ncu_all.json \
  > $W/run_ncu_all.txt 2>&1
echo "run --ncu all: rc=$? $(( $(date +%s) - t0 )) s"
t0=$(date +%s)
timeout 150 python3 -m attnscope.cli.main run --dtype fp32 --variants flex_compiled,sdpa_efficient,sdpa_math --ncu \
  --kernels --no-peak --json $W/run_ncu_fp32.json > $W/run_ncu_fp32.txt 2>&1
echo "run --ncu fp32: rc=$? $(( $(date +%s) - t0 )) s"; grep -E "name table said|TC|CPU µs" $W/run_ncu_fp32.txt | cut -c1-200 | head
tar czf "$OUT/final.tgz" -C /tmp final && ls -la "$OUT/final.tgz"
