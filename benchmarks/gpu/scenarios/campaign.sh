#!/usr/bin/env bash
# The one campaign loop on the GPU: run (process executor, --json saved per variant), a sweep stopped by SIGTERM then resumed, a second writer refused, a model grid whose resume with another --budget is refused unless --force.
# estimate: 150 s
set -u; D=$1
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 KINETO_LOG_LEVEL=6
A=(python3 -m attnscope.cli.main)
CASE=(--device cuda --batch 2 --heads 8 --seq 1024 --head-dim 64 --dtype bf16)
# run: every default variant through worker processes, the document rewritten after each
timeout 120 "${A[@]}" run "${CASE[@]}" --executor process --json "$D/run.json" > "$D/run.txt" 2>&1; echo "run rc=$?" >> "$D/rc.txt"
# sweep: stopped by SIGTERM after its first row, then --resume measures only what is missing
S=(sweep --device cuda --seq 512,1024,2048 --head-dim 64 --causal both --budget 0.1 --executor process --out "$D/s.jsonl")
"${A[@]}" "${S[@]}" > "$D/sweep_stopped.txt" 2> "$D/sweep_stopped.err" &
PID=$!
while [ "$(cat "$D/s.jsonl" 2>/dev/null | grep -c .)" -lt 1 ] && kill -0 $PID 2>/dev/null; do sleep 0.2; done
# a second writer while the first holds the store: refused in one line, exit 2
timeout 60 "${A[@]}" "${S[@]}" > "$D/second_writer.txt" 2>&1; echo "second writer rc=$? (expect 2)" >> "$D/rc.txt"
kill -TERM $PID; wait $PID; echo "sweep stopped rc=$? (expect 143)" >> "$D/rc.txt"
BEFORE=$(grep -c . "$D/s.jsonl")
timeout 240 "${A[@]}" "${S[@]}" --resume > "$D/sweep_resumed.txt" 2>&1; echo "sweep resumed rc=$?" >> "$D/rc.txt"
python3 - "$D" "$BEFORE" >> "$D/rc.txt" <<'PY'
import json, sys
rows = [json.loads(x) for x in open(f"{sys.argv[1]}/s.jsonl") if x.strip()]
keys = [(r["variant"], json.dumps(r["case"], sort_keys=True)) for r in rows]
print(f"sweep rows before the resume {sys.argv[2]}, after {len(rows)}, distinct {len(set(keys))} (each once)")
PY
# model: a resume with another --budget is refused (exit 2, naming it); with --force it measures the rest
M=(model --config tiny --impl sdpa,eager --seq 128 --out "$D/m.jsonl")
timeout 120 "${A[@]}" "${M[@]}" --mode prefill --budget 0.2 > "$D/model.txt" 2>&1; echo "model rc=$?" >> "$D/rc.txt"
timeout 60 "${A[@]}" "${M[@]}" --mode prefill,train --budget 0.3 --resume > "$D/model_refused.txt" 2>&1
echo "model resume, other budget rc=$? (expect 2)" >> "$D/rc.txt"
timeout 120 "${A[@]}" "${M[@]}" --mode prefill,train --budget 0.3 --resume --force --json "$D/model.json" \
  > "$D/model_forced.txt" 2>&1; echo "model resume --force rc=$?" >> "$D/rc.txt"
cp "$D/m.jsonl.settings.json" "$D/model_settings.json" 2>/dev/null
