#!/usr/bin/env bash
# The GPU measurements behind docs/results/, one driver:
#
#   bash benchmarks/gpu/run.sh [--out DIR] SCENARIO...    # from the repository root; DIR defaults to $OUT, else out/
#   bash benchmarks/gpu/run.sh --list                     # the scenarios and their time estimates
#
# Each scenario is benchmarks/gpu/scenarios/<name>.sh, called with its own output folder ($1) and the repository
# root as working directory; its first lines hold `# estimate: N s` (on one H200) so that scenarios can be packed
# into one device call.  Wheels in .whl/ (plotly, orjson, attn_gym, other attention libraries, …) are installed
# first, without their dependencies and without the network, into /tmp/attnscope-site.  Everything lands in ONE
# tarball, DIR/attnscope-gpu-<UTC date-time>.tgz:
#   attnscope-gpu-<date>/env.txt              GPU, driver, python, torch, CUDA, cuDNN; pip.txt: the wheels installed
#   attnscope-gpu-<date>/<scenario>/          what the scenario wrote, plus scenario.txt (rc, seconds, log tail)
# Then, here: python benchmarks/results.py DIR/attnscope-gpu-<date>.tgz   (tables and raw outputs into docs/results/)
set -u
cd "$(dirname "$0")/../.."
HERE=benchmarks/gpu/scenarios
if [ "${1:-}" = --list ] || [ $# -eq 0 ]; then
  for f in "$HERE"/*.sh; do
    printf '%-18s %6s  %s\n' "$(basename "$f" .sh)" "$(sed -n 's/^# estimate: //p' "$f" | head -1)" \
      "$(sed -n '2s/^# //p' "$f")"
  done
  [ $# -eq 0 ] && { echo "usage: bash benchmarks/gpu/run.sh [--out DIR] SCENARIO..." >&2; exit 2; }
  exit 0
fi
DEST=${OUT:-out}
if [ "$1" = --out ]; then DEST=${2:?--out needs a folder}; shift 2; fi
for s in "$@"; do
  [ -f "$HERE/$s.sh" ] || { echo "unknown scenario '$s' (bash benchmarks/gpu/run.sh --list)" >&2; exit 2; }
done
mkdir -p "$DEST" || exit 2
STAMP=$(date -u +%Y%m%d-%H%M%S)
NAME=attnscope-gpu-$STAMP
W=/tmp/$NAME; rm -rf "$W"; mkdir -p "$W"

if ls .whl/*.whl >/dev/null 2>&1; then
  for w in .whl/*.whl; do
    python3 -m pip install -q --no-index --find-links .whl --no-deps --no-compile --no-cache-dir \
      --target /tmp/attnscope-site "$w" >>"$W/pip.txt" 2>&1 && echo "installed $(basename "$w")" >>"$W/pip.txt" \
      || echo "FAILED $(basename "$w"); going on" >>"$W/pip.txt"
  done
  export PYTHONPATH=/tmp/attnscope-site
fi
# A wheel too large to travel beside the tree goes as an xz tarball of its unpacked files (FlashInfer's: 34 MB as a
# wheel, 11 MB so):  mkdir u && (cd u && unzip -q ../W.whl) && tar -C u -cf - . | xz -9 > .whl/NAME.tar.xz
for t in .whl/*.tar.xz; do
  [ -f "$t" ] || continue
  mkdir -p /tmp/attnscope-site && tar -C /tmp/attnscope-site -xJf "$t" && echo "unpacked $(basename "$t")" >>"$W/pip.txt" \
    || echo "FAILED $(basename "$t"); going on" >>"$W/pip.txt"
  export PYTHONPATH=/tmp/attnscope-site
done
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 KINETO_LOG_LEVEL=6
export ATTNSCOPE="python3 -m attnscope.cli.main"
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c "import sys, torch; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', \
torch.version.cuda, 'cudnn', torch.backends.cudnn.version())"
  # a copied working tree may carry older git metadata: ATTNSCOPE_COMMIT, set by whoever copied it, names the code
  if [ -n "${ATTNSCOPE_COMMIT:-}" ]; then echo "commit $ATTNSCOPE_COMMIT (as given)"; else git rev-parse HEAD 2>/dev/null; fi
  date -u; } >"$W/env.txt" 2>&1
cat "$W/env.txt"

for s in "$@"; do
  mkdir -p "$W/$s"
  t0=$(date +%s)
  bash "$HERE/$s.sh" "$W/$s" >"$W/$s/log.txt" 2>&1
  rc=$?
  { echo "scenario $s: rc=$rc in $(( $(date +%s) - t0 )) s (estimate: $(sed -n 's/^# estimate: //p' "$HERE/$s.sh"))"
    tail -15 "$W/$s/log.txt"; } >"$W/$s/scenario.txt"
  head -1 "$W/$s/scenario.txt"
done
tar czf "$DEST/$NAME.tgz" -C /tmp "$NAME" && ls -la "$DEST/$NAME.tgz"
