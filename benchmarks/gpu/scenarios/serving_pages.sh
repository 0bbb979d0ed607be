#!/usr/bin/env bash
# Serving sweep: which page size reads fastest (16, 32, 64, 128, and a packed cache) per variant, B=32, lengths 1k-32k, then recommend.
# estimate: 200 s
set -u; D=$1
timeout 180 $ATTNSCOPE sweep --batch 32 --heads 32 --kv-heads 8 --seq 1 --head-dim 128 --dtype bf16 \
  --kv-lens uniform:1024..32768@0 --page-size 0,16,32,64,128 --budget 0.2 \
  --variants paged_gather_sdpa,paged_flex_compiled,paged_varlen,paged_flashinfer \
  --out "$D/serving_pages.jsonl" >"$D/serving_pages.txt" 2>&1
echo "sweep rc=$?"
$ATTNSCOPE recommend "$D/serving_pages.jsonl" --json "$D/serving_pages_rec.json" >"$D/serving_pages_rec.txt" 2>&1
echo "recommend rc=$?"
