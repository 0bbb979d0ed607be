#!/usr/bin/env bash
# GPU probe (about 3 minutes): external libraries, their kernels, a few traces, ncu metric names.
# Run from the repo root on the GPU machine; carries wheels in .whl/ when present.
set -u
P=/tmp/probe; mkdir -p $P
if [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site
fi
export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$PWD PYTHONUNBUFFERED=1 KINETO_LOG_LEVEL=6
timeout 420 python3 benchmarks/gpu/probe_libs.py $P 2>&1 | tee $P/probe_libs.txt
(ncu --version; ncu --query-metrics --chip gh100) > $P/ncu_metrics.txt 2>&1
grep -i -E "pipe_tensor|hmma|gmma|imma" $P/ncu_metrics.txt | head -40
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv
tar czf "$OUT/probe.tgz" -C /tmp probe && ls -la "$OUT"
