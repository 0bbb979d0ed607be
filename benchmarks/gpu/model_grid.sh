#!/usr/bin/env bash
# attnscope model as jobs on the GPU: a grid killed with kill -9 and resumed, and a grid over every GPU.
# Usage (from the repository root): bash benchmarks/gpu/model_grid.sh OUTDIR
# Writes into OUTDIR:
#   grid.jsonl, grid.json, grid.txt     llama-3-8b cut to 2 layers, sdpa and eager, --seq 512..4096x2 --batch 1,4,
#                                       prefill and train; killed with kill -9 after its 3rd row, then --resume
#   resume.txt                          rows before the kill, after the resume, and the check that no row repeats
#   recommend.txt                       attnscope recommend grid.jsonl (the same recommendations as grid.json)
#   devices_all.jsonl, devices_all.txt  the same grid with --devices all (one worker per GPU) and its wall time
#   size_refused.txt                    llama-3-8b without --layers in train mode on the GPU's free memory
#   versions.txt
set -u
OUT=${1:?usage: bash benchmarks/gpu/model_grid.sh OUTDIR}
mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 KINETO_LOG_LEVEL=6
(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
 python3 -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__)') \
  > "$OUT/versions.txt" 2>&1
# GRID_IMPL, GRID_SEQ, GRID_BATCH (defaults below) shrink the grid to fit a device call
GRID=(model --config llama-3-8b --layers 2 --impl "${GRID_IMPL:-sdpa,eager}" --mode prefill,train
      --seq "${GRID_SEQ:-512..4096x2}" --batch "${GRID_BATCH:-1,4}" --budget 0.5 --out "$OUT/grid.jsonl")
rm -f "$OUT/grid.jsonl"
python3 -m attnscope.cli.main "${GRID[@]}" > "$OUT/grid_killed.txt" 2>&1 &
PID=$!
while [ "$(grep -c . "$OUT/grid.jsonl" 2>/dev/null || echo 0)" -lt 3 ] && kill -0 $PID 2>/dev/null; do sleep 0.5; done
kill -9 $PID 2>/dev/null; wait $PID 2>/dev/null
BEFORE=$(grep -c . "$OUT/grid.jsonl")
cp "$OUT/grid.jsonl" "$OUT/grid_before_resume.jsonl"
t0=$(date +%s)
timeout 540 python3 -m attnscope.cli.main "${GRID[@]}" --resume --json "$OUT/grid.json" > "$OUT/grid.txt" 2>&1
echo "resume: rc=$? $(( $(date +%s) - t0 )) s" >> "$OUT/resume.txt"
python3 - "$OUT" "$BEFORE" >> "$OUT/resume.txt" <<'PY'
import json, sys
out, before = sys.argv[1], int(sys.argv[2])
rows = [json.loads(x) for x in open(f"{out}/grid.jsonl") if x.strip()]
old = [json.loads(x) for x in open(f"{out}/grid_before_resume.jsonl") if x.strip()]
keys = [(r["impl"], r["mode"], r["batch"], r["seq"]) for r in rows]
print(f"rows before the kill: {before}; after --resume: {len(rows)}; distinct: {len(set(keys))} (every row once)")
print("rows before the kill unchanged:", rows[: len(old)] == old)
for r in rows:
    print(r["impl"], r["mode"], f"B{r['batch']}", f"S{r['seq']}", r["status"], r.get("median_us"), (r.get("reason") or "")[:80])
PY
python3 -m attnscope.cli.main recommend "$OUT/grid.jsonl" > "$OUT/recommend.txt" 2>&1
[ -n "${GRID_SKIP_DEVICES:-}" ] || { t0=$(date +%s)
timeout 540 python3 -m attnscope.cli.main model --config llama-3-8b --layers 2 --impl sdpa,eager --mode prefill,train \
  --seq 512..4096x2 --batch 1,4 --budget 0.5 --devices all --out "$OUT/devices_all.jsonl" > "$OUT/devices_all.txt" 2>&1
echo "devices all: rc=$? $(( $(date +%s) - t0 )) s" >> "$OUT/devices_all.txt"; }
t0=$(date +%s)
timeout 120 python3 -m attnscope.cli.main model --config llama-3-8b --mode train --seq 8192 --batch 8 \
  > "$OUT/size_refused.txt" 2>&1
echo "size check: rc=$? $(( $(date +%s) - t0 )) s (expect rc=2 within seconds)" >> "$OUT/size_refused.txt"
