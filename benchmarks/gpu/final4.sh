#!/usr/bin/env bash
# Last check of this round on the H200 (about 5 minutes): the test suite under the image's torch 2.11 (wheels
# of attn_gym, plotly and orjson carried in .whl/), then `attnscope run --variants all --kernels`, the README's
# example.  Writes $OUT/final4.tgz.  Run from the repository root: bash benchmarks/gpu/final4.sh
set -u
W=/tmp/final4; rm -rf $W; mkdir -p $W
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl > $W/pip.txt 2>&1
  export PYTHONPATH=/tmp/site
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 KINETO_LOG_LEVEL=6 ATTNSCOPE_NO_SHARED_DATA=1
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import sys, torch; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())"; date -u; } > $W/env.txt 2>&1
cat $W/env.txt
t0=$(date +%s)
timeout 330 python3 -m pytest -q -p no:cacheprovider -rs -x tests > $W/pytest.txt 2>&1
echo "pytest: rc=$? $(( $(date +%s) - t0 )) s"; tail -4 $W/pytest.txt
t0=$(date +%s)
timeout 150 python3 -m attnscope.cli.main run --variants all --kernels --json $W/run_all.json > $W/run_all.txt 2>&1
echo "run all: rc=$? $(( $(date +%s) - t0 )) s"; grep -E "^│ [a-z]" $W/run_all.txt | grep -v skipped | head -12 | cut -c1-150
tar czf "$OUT/final4.tgz" -C /tmp final4 && ls -la "$OUT/final4.tgz"
