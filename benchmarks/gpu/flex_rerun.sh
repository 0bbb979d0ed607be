#!/usr/bin/env bash
# The compiled-flex points of the H200 sweep that never ran compiled flex (about 5-6 minutes):
# 11 jobs the first runs' time cap left out and 37 rows that ran eager flex after dynamo's
# recompile limit (before the fix in variants/flex.py).  The 16 rows that did run the compiled
# kernel seed the store, so --resume measures exactly the other 48.  Writes $OUT/flex_rerun.tgz:
#   flex_compiled.jsonl   the 16 kept rows + the new ones (recommend reads it after h200_sweep.jsonl:
#                         a later row of the same variant, case and mode stands)
#   sweep.txt, env.txt
# Run from the repository root: bash benchmarks/gpu/flex_rerun.sh
set -u
W=/tmp/flex_rerun; rm -rf $W; mkdir -p $W
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 KINETO_LOG_LEVEL=6
CAP=${FLEX_CAP_S:-420}
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c "import sys, torch; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())"
} > $W/env.txt 2>&1
python3 - docs/results/raw/h200_sweep.jsonl $W/flex_compiled.jsonl <<'PY'
import json, sys
kept = 0
with open(sys.argv[2], "w") as out:
    for line in open(sys.argv[1]):
        r = json.loads(line)
        if r.get("variant") == "flex_compiled" and any("triton" in k["name"] for k in r.get("kernels") or []):
            out.write(line if line.endswith("\n") else line + "\n")
            kept += 1
print(f"seeded with {kept} compiled-flex rows that ran the generated kernel")
PY
GRID="--device cuda --heads 16 --seq 128..16384x2 --head-dim 64,128 --causal both --mode fwd,fwd_bwd
      --budget-tokens 16384 --budget 0.05 --timeout 90"
t0=$(date +%s)
# shellcheck disable=SC2086
timeout -s INT -k 20 "$CAP" python3 -m attnscope.cli.main sweep $GRID --variants flex_compiled --out $W/flex_compiled.jsonl \
  --resume > $W/sweep.txt 2>&1
echo "flex_compiled sweep: rc=$? in $(( $(date +%s) - t0 )) s (124: stopped at the cap after saving, resumable)"
python3 - $W/flex_compiled.jsonl <<'PY'
import collections, json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
gen = collections.Counter((r["status"], any("triton" in k["name"] for k in r.get("kernels") or [])) for r in rows)
print(f"{len(rows)} rows; (status, ran a generated kernel): {dict(gen)}")
PY
tail -n 25 $W/sweep.txt | cut -c1-200
tar czf "$OUT/flex_rerun.tgz" -C /tmp flex_rerun && ls -la "$OUT/flex_rerun.tgz"
