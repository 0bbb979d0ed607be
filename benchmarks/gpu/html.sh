#!/usr/bin/env bash
# The HTML report on the GPU (about 3 minutes): a full run with --html (kernel start times kept in
# the document), analyze --html on one of its traces, and `attnscope report` over both.
# Run from the repo root on the GPU machine.  The image lacks plotly: carry its wheel in .whl/
# (pip download plotly==7.1.0 --no-deps -d .whl).  Writes $OUT/html.tgz.
set -u
P=/tmp/html; rm -rf $P; mkdir -p $P
if [ -d .whl ] && ls .whl/plotly-*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site_html .whl/plotly-*.whl \
    && export PYTHONPATH=/tmp/site_html
fi
export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$PWD PYTHONUNBUFFERED=1 KINETO_LOG_LEVEL=6
python3 -c "import plotly; print('plotly', plotly.__version__)" 2>&1 | tee $P/versions.txt
python3 -c "import torch; print('torch', torch.__version__, torch.version.cuda)" 2>&1 | tee -a $P/versions.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a $P/versions.txt
timeout 420 python3 -m attnscope.cli.main run --variants all --kernels --trace-dir $P/traces --json $P/run.json \
  --html $P/run.html > $P/run.txt 2>&1; echo "run rc=$?" | tee -a $P/versions.txt
timeout 120 python3 -m attnscope.cli.main analyze $P/traces/sdpa_math.json $P/traces/flex.json --json $P/analyze.json \
  --html $P/analyze.html > $P/analyze.txt 2>&1; echo "analyze rc=$?" | tee -a $P/versions.txt
timeout 120 python3 -m attnscope.cli.main report $P/run.json $P/analyze.json -o $P/both.html 2>&1 | tee -a $P/versions.txt
python3 - <<'PY' 2>&1 | tee $P/summary.txt
import json
d = json.load(open("/tmp/html/run.json"))
for r in d["results"]:
    ks = r.get("kernels") or []
    starts = sum(1 for k in ks if k.get("start_us") is not None)
    print(f"{r['variant']:15s} {r['status']:8s} kernels={r.get('num_kernels')} events={len(ks)} with start_us={starts}")
PY
rm -f $P/both.html  # the same bytes as the two pages; keep the tarball small
ls -la $P
tar czf "$OUT/html.tgz" -C /tmp html && ls -la "$OUT"
