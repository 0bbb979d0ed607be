#!/usr/bin/env bash
# A user's own mask_mod (--mask-mod): the offsets-based document mask and a sliding window, each checked entry by entry against the built-in and measured beside it, B2 H16 S4096 D64 bf16.
# estimate: 150 s
set -u; D=$1
U=benchmarks/gpu/user_mods
V=sdpa_default,sdpa_cudnn,flex,flex_compiled,flex_user,flex_compiled_user
for spec in document:$U/doc_offsets.py:doc_mask sliding:$U/sliding.py:sliding_window; do
  n=${spec%%:*}
  timeout 240 $ATTNSCOPE run --batch 2 --heads 16 --seq 4096 --head-dim 64 --dtype bf16 --mask-mod "${spec#*:}" \
    --budget 0.3 --kernels --variants "$V" --json "$D/mask_mod_$n.json" >"$D/mask_mod_$n.txt" 2>&1
  echo "mask_mod $n: rc=$?"
done
# one run with no --variants: the default set and both flex_user variants, added by --mask-mod
timeout 240 $ATTNSCOPE run --batch 2 --heads 16 --seq 4096 --head-dim 64 --dtype bf16 \
  --mask-mod "$U/doc_offsets.py:doc_mask" --budget 0.3 --json "$D/mask_mod_default.json" >"$D/mask_mod_default.txt" 2>&1
echo "mask_mod default set: rc=$?"
