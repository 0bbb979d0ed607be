#!/usr/bin/env bash
# Every measuring command once on the GPU, small: run (dense and paged with FlashInfer), run --steps, sweep then recommend, model prefill and decode --steps graph-replayed; each exit status and its last lines.
# estimate: 180 s
set -u; D=$1
t() { local name=$1; shift; timeout 120 "$@" >"$D/$name.txt" 2>&1; echo "$name rc=$?" | tee -a "$D/rc.txt"; }
t run $ATTNSCOPE run --batch 2 --heads 8 --seq 1024 --head-dim 64 --budget 0.1 \
  --variants sdpa_flash,sdpa_cudnn,sdpa_default,flex_compiled --json "$D/run.json"
t paged $ATTNSCOPE run --batch 8 --heads 32 --kv-heads 8 --seq 1 --head-dim 128 --kv-lens uniform:512..4096@0 \
  --page-size 16 --budget 0.1 --variants paged_gather_sdpa,paged_flex_compiled,paged_flashinfer --json "$D/paged.json"
t steps $ATTNSCOPE run --batch 4 --heads 32 --kv-heads 8 --seq 1 --head-dim 128 --kv-lens uniform:512..2048@0 \
  --page-size 16 --budget 0.1 --steps 32 --bucket 64 --variants paged_gather_sdpa,paged_flex_compiled --json "$D/steps.json"
t sweep $ATTNSCOPE sweep --seq 512,2048 --variants sdpa_flash,sdpa_cudnn,flex_compiled --budget 0.1 --out "$D/sweep.jsonl"
t recommend $ATTNSCOPE recommend "$D/sweep.jsonl" --json "$D/rec.json"
t model $ATTNSCOPE model --config tiny --mode prefill --impl sdpa,eager --seq 256 --budget 0.2 --json "$D/model.json"
t model_steps $ATTNSCOPE model --config llama-3-8b --layers 1 --batch 4 --seq 512 --mode decode --steps 16 \
  --replay eager,graph --impl sdpa --budget 0.2 --json "$D/model_steps.json"
cat "$D/rc.txt"
