#!/usr/bin/env bash
# attnscope model on the GPU (about 3 minutes on the H200): the Llama-3-8B preset cut to 2 layers,
# batch 2, seq 2048, prefill, decode and train, with eager, sdpa, flex_attention (and flash_attention_2,
# a skipped row where flash-attn is not installed).  Writes $OUT/model.tgz:
#   llama3_8b_h200.json/.txt   the JSON document and the printed output of attnscope model
#   traces/                    the profiled step of each row (gzipped Kineto traces, as many as fit)
#   analyze_train_sdpa.txt     attnscope analyze on the sdpa training trace (the split from a trace alone)
#   modules/                   a tiny training step traced annotated, with_modules and with_stack (docs/model.md)
#   versions.txt, *.err        versions and logs
# Run from the repository root: bash benchmarks/gpu/model.sh
set -u
W=/tmp/model_gpu; rm -rf $W; mkdir -p $W/traces $W/modules
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 KINETO_LOG_LEVEL=6
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
(nvidia-smi --query-gpu=name,driver_version --format=csv; python3 -c 'import torch, transformers; print("torch", torch.__version__, "cuda", torch.version.cuda, "transformers", transformers.__version__)'; python3 -c 'import flash_attn; print("flash_attn", flash_attn.__version__)') > $W/versions.txt 2>&1
cat $W/versions.txt
t0=$(date +%s)
timeout 170 python3 -m attnscope.cli.main model --config llama-3-8b --layers 2 --batch 2 --seq 2048 --time-limit 110 \
  --mode prefill,decode,train --impl eager,sdpa,flex_attention,flash_attention_2 --budget 1.0 \
  --json $W/llama3_8b_h200.json --trace-dir $W/traces > $W/llama3_8b_h200.txt 2> $W/llama3_8b_h200.err
echo "model: rc=$? $(( $(date +%s) - t0 )) s"; cut -c1-200 $W/llama3_8b_h200.txt | tail -60
t0=$(date +%s)
if [ -f $W/traces/model_sdpa_train.json ]; then
  timeout 30 python3 -m attnscope.cli.main analyze $W/traces/model_sdpa_train.json > $W/analyze_train_sdpa.txt 2>&1
  echo "analyze: rc=$? $(( $(date +%s) - t0 )) s"
fi
t0=$(date +%s)
timeout 45 python3 benchmarks/gpu/model_modules.py $W/modules > $W/modules/summary.txt 2> $W/modules/err.txt
echo "modules: rc=$? $(( $(date +%s) - t0 )) s"; cut -c1-300 $W/modules/summary.txt
# Traces: gzip, then keep as many as fit in ~12 MiB (smallest first), so the tarball stays under 16 MiB.
gzip -9 -f $W/traces/*.json 2>/dev/null
total=0
for f in $(ls -S -r $W/traces/*.gz 2>/dev/null); do
  s=$(stat -c %s "$f"); if [ $((total + s)) -gt 12000000 ]; then rm -f "$f"; else total=$((total + s)); fi
done
tar czf "$OUT/model.tgz" -C /tmp model_gpu && ls -la "$OUT/model.tgz"
