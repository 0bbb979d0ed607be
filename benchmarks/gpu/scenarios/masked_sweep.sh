#!/usr/bin/env bash
# A masked sweep (no mask, sliding:256, documents; soft-cap 0 and 30) at B2 H16 S4096 D64, then attnscope recommend on its rows.
# estimate: 200 s
set -u; D=$1
timeout 400 $ATTNSCOPE sweep --batch 2 --heads 16 --seq 4096 --head-dim 64 \
  --mask none,sliding:256,document:1000,1500,600,996 --softcap 0,30 \
  --variants sdpa_default,sdpa_cudnn,sdpa_efficient,flex_compiled,naive --budget 0.2 --quiet \
  --out "$D/masked_sweep.jsonl" --json "$D/masked_sweep_recommend.json" >"$D/masked_sweep.txt" 2>&1
echo "sweep rc=$?" >>"$D/masked_sweep.txt"
timeout 60 $ATTNSCOPE recommend "$D/masked_sweep.jsonl" >"$D/recommend.txt" 2>&1
echo "recommend rc=$?" >>"$D/recommend.txt"
