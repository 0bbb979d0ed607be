#!/usr/bin/env bash
# Decode: one query against an 8192-token cache, GQA 32/8 heads, lower-right causal, torch's variants and the libraries installed.
# estimate: 90 s
set -u; D=$1
V=naive,sdpa_math,sdpa_efficient,sdpa_flash,sdpa_cudnn,sdpa_default,flex,flex_compiled
V=$V,cudnn_frontend,sageattention,xformers,flash_attn2,flash_attn3,flashinfer_decode
timeout 150 $ATTNSCOPE run --batch 1 --heads 32 --kv-heads 8 --seq 1 --seq-kv 8192 --head-dim 128 --dtype bf16 \
  --mask causal_lower_right --budget 0.3 --kernels --variants "$V" --json "$D/decode.json" >"$D/decode.txt" 2>&1
