#!/usr/bin/env bash
# On the GPU: --flush-l2 takes effect (no "no effect" note in the document), a small case's sizes read in KiB (cold-L2 rotation text, hidden copies), decode of an encoder is refused while a decoder decodes, and recommend on a sweep's store says its merged mask spellings.
# estimate: 120 s
set -u; D=$1
# 1. a small case with --flush-l2: the document carries no notes (the flush applies on a GPU); its rotation text and
#    sizes never read 0.0 MiB
timeout 90 $ATTNSCOPE run --batch 1 --heads 2 --seq 64 --head-dim 16 --dtype bf16 --variants naive,sdpa_flash \
  --flush-l2 --budget 0.1 --json "$D/flush.json" >"$D/flush.txt" 2>&1
echo "run rc=$?" >>"$D/flush.txt"
python3 - "$D/flush.json" >"$D/flush_check.txt" 2>&1 <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
print("document notes:", doc.get("notes"))
for r in doc["results"]:
    t = r.get("timing") or {}
    print(r["variant"], r["status"], "rotation:", t.get("rotation"))
    print("   hidden copies bytes:", [c["bytes"] for c in r.get("hidden_copies") or []], "peak bytes:", r.get("peak_memory_bytes"))
PY
grep -c "0\.0 MiB" "$D/flush.txt" "$D/flush.json" >>"$D/flush_check.txt"
# 2. bert-base decode: one line, exit 2, in seconds; gpt2 (one layer) still decodes
timeout 60 $ATTNSCOPE model --config bert-base --layers 1 --mode decode --seq 64 >"$D/bert_decode.txt" 2>&1
echo "bert decode rc=$?" >>"$D/bert_decode.txt"
timeout 90 $ATTNSCOPE model --config gpt2 --layers 1 --mode decode --impl sdpa,eager --seq 128 --batch 1 \
  --budget 0.2 >"$D/gpt2_decode.txt" 2>&1
echo "gpt2 decode rc=$?" >>"$D/gpt2_decode.txt"
# 3. a sweep that merges two spellings at seq = seq_kv; recommend on its store alone says so
COLUMNS=200 timeout 90 $ATTNSCOPE sweep --batch 1 --heads 4 --seq 256,512 --seq-kv 512 --head-dim 64 \
  --mask causal_top_left,causal_lower_right --variants sdpa_flash --budget 0.1 --quiet --executor inline \
  --out "$D/merged.jsonl" >"$D/merged_sweep.txt" 2>&1
echo "sweep rc=$?" >>"$D/merged_sweep.txt"
COLUMNS=200 timeout 30 $ATTNSCOPE recommend "$D/merged.jsonl" >"$D/merged_recommend.txt" 2>&1
echo "recommend rc=$?" >>"$D/merged_recommend.txt"
cat "$D/flush_check.txt"; for f in bert_decode gpt2_decode; do tail -n 2 "$D/$f.txt"; done
grep -h "same mask as\|rc=" "$D/merged_sweep.txt" "$D/merged_recommend.txt"
