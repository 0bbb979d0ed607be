#!/usr/bin/env bash
# The masked cases as users run them: document and sliding-window masks at B2 H16 S4096 D64 bf16, torch's variants and compiled flex.
# estimate: 120 s
set -u; D=$1
V=sdpa_default,sdpa_cudnn,sdpa_efficient,sdpa_math,flex_compiled,naive
for m in document:1000,1500,600,996 sliding:256 prefix:1024; do
  n=${m%%:*}
  timeout 150 $ATTNSCOPE run --batch 2 --heads 16 --seq 4096 --head-dim 64 --dtype bf16 --mask "$m" --budget 0.3 \
    --kernels --variants "$V" --json "$D/mask_$n.json" >"$D/mask_$n.txt" 2>&1
done
