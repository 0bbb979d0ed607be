#!/usr/bin/env bash
# Attention as served: paged decode B=32, pages of 16, ragged lengths 1k-32k, every serving variant; a 256-step decode loop eager and graph-replayed.
# estimate: 230 s
set -u; D=$1; mkdir -p "$D/traces"
# 1. paged decode: B=32, GQA 32/8 heads, D=128, bf16, lengths drawn uniform 1024..32768 (seed 0), pages of 16
V=paged_gather_sdpa,paged_gather_flash,paged_gather_flash_fa3,paged_gather_flash_fa4,paged_flex,paged_flex_compiled
V=$V,paged_flex_triton,paged_flex_triton_decode,paged_flex_flash,paged_varlen,paged_flashinfer
timeout 130 $ATTNSCOPE run --batch 32 --heads 32 --kv-heads 8 --seq 1 --head-dim 128 --dtype bf16 \
  --kv-lens uniform:1024..32768@0 --page-size 16 --budget 0.3 --kernels --verbose --variants "$V" \
  --json "$D/paged_decode.json" --trace-dir "$D/traces/paged_decode" >"$D/paged_decode.txt" 2>&1
echo "paged decode rc=$?"
# 2. decode over a growing cache: 256 steps from lengths 1k-8k (B=8), eager (a new shape each step) and replayed
#    from one CUDA graph per 256-token bucket; the loop traces (eager, capture, graph replay) are kept, gzipped
timeout 90 $ATTNSCOPE run --batch 8 --heads 32 --kv-heads 8 --seq 1 --head-dim 128 --dtype bf16 \
  --kv-lens uniform:1024..8192@0 --page-size 16 --budget 0.2 --steps 256 --bucket 256 --verbose \
  --variants paged_gather_sdpa,paged_flex_compiled,paged_varlen,paged_flashinfer \
  --json "$D/decode_loop.json" --trace-dir "$D/traces/decode_loop" >"$D/decode_loop.txt" 2>&1
echo "decode loop rc=$?"
gzip -f "$D"/traces/*/*.json 2>/dev/null
ls -la "$D"/traces/*/
