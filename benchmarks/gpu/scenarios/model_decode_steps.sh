#!/usr/bin/env bash
# attnscope model --mode decode --steps: Llama-3-8B cut to 2 layers, B=8, a 2048-token prompt, 64 steps over a static cache, eager and graph-replayed, sdpa/eager; then analyze of each loop's trace.
# estimate: 150 s
set -u; D=$1
timeout 170 $ATTNSCOPE model --config llama-3-8b --layers 2 --batch 8 --seq 2048 --mode decode --steps 64 \
  --replay eager,graph --impl sdpa,eager --executor inline --budget 0.3 --json "$D/model_decode_steps.json" \
  --trace-dir "$D/traces" >"$D/model_decode_steps.txt" 2>&1
echo "model rc=$?" >>"$D/model_decode_steps.txt"
for t in "$D"/traces/*.json; do
  [ -f "$t" ] || continue
  timeout 60 $ATTNSCOPE analyze "$t" --json "${t%.json}.analyze.json" >"${t%.json}.analyze.txt" 2>&1
  gzip -9 "$t"
done
