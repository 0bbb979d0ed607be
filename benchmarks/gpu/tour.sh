#!/usr/bin/env bash
# `attnscope tour --auto` on the GPU (the study's shapes; about 2 minutes on an H200): the transcript JSON,
# its HTML page and the console log, written into the directory $1 (default $OUT, else ./tour_out).
# Run from the repository root.  The page needs plotly: where the image lacks it, carry its wheel in .whl/
# (pip download plotly==7.1.0 --no-deps -d .whl).  Then, on a machine with Chromium:
#   python benchmarks/tour_screenshot.py DIR/tour_h200.json docs/results/tour.png
set -u
DIR=${1:-${OUT:-tour_out}}
mkdir -p "$DIR"
if ! python3 -c "import plotly" 2>/dev/null && [ -d .whl ] && ls .whl/plotly-*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site_tour .whl/plotly-*.whl \
    && export PYTHONPATH=/tmp/site_tour
fi
export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$PWD PYTHONUNBUFFERED=1 KINETO_LOG_LEVEL=6 COLUMNS=160
{
  python3 -c "import torch; print('torch', torch.__version__, 'CUDA', torch.version.cuda, 'cuDNN', torch.backends.cudnn.version())"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || true
} 2>&1 | tee "$DIR/tour_versions.txt"
HTML=(--html "$DIR/tour_h200.html")
python3 -c "import plotly" 2>/dev/null || { echo "no plotly: the page is not written" | tee -a "$DIR/tour_versions.txt"; HTML=(); }
rm -f "$DIR/tour_h200.json"
start=$(date +%s)
timeout 560 python3 -m attnscope.cli.main tour --device cuda --auto --out "$DIR/tour_h200.json" "${HTML[@]}" \
  > "$DIR/tour_h200.txt" 2>&1
rc=$?
echo "tour rc=$rc in $(( $(date +%s) - start )) s" | tee -a "$DIR/tour_versions.txt"
if [ $rc -ne 0 ] && [ -s "$DIR/tour_h200.json" ]; then  # a step that ran past the limit: finish what is left
  timeout 300 python3 -m attnscope.cli.main tour --device cuda --auto --resume --out "$DIR/tour_h200.json" "${HTML[@]}" \
    >> "$DIR/tour_h200.txt" 2>&1
  echo "resume rc=$?" | tee -a "$DIR/tour_versions.txt"
fi
tail -n 12 "$DIR/tour_h200.txt"
ls -la "$DIR"
