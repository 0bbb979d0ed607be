#!/usr/bin/env bash
# The study at the GPU default case and at B1 H32 S4096 D128 (traces kept), guess first, GQA, the CPU study under this torch.
# estimate: 240 s
set -u; D=$1
$ATTNSCOPE variants >"$D/variants.txt" 2>&1
timeout 120 $ATTNSCOPE run --variants all --kernels --json "$D/study_default.json" --trace-dir "$D/traces_default" \
  >"$D/study_default.txt" 2>&1
timeout 120 $ATTNSCOPE run --variants all --batch 1 --heads 32 --seq 4096 --head-dim 128 --kernels \
  --json "$D/study_big.json" --trace-dir "$D/traces_big" >"$D/study_big.txt" 2>&1
timeout 60 $ATTNSCOPE run --variants naive,naive_inplace,sdpa_math,sdpa_flash,sdpa_default \
  --guess examples/guess_study.toml --json "$D/guess.json" >"$D/guess.txt" 2>&1
timeout 60 $ATTNSCOPE run --variants all --kv-heads 4 --json "$D/gqa.json" >"$D/gqa.txt" 2>&1
timeout 60 $ATTNSCOPE run --device cpu --json "$D/cpu.json" >"$D/cpu.txt" 2>&1
timeout 60 python3 benchmarks/gpu_probes.py >"$D/probes.txt" 2>&1
timeout 90 ncu --clock-control none --section Occupancy --section LaunchStats --csv --page details \
  -k "regex:flash_fwd|cudnn_generated|fmha_cutlass|triton_tem" python3 benchmarks/ncu_kernels.py >"$D/ncu.csv" 2>"$D/ncu.err"
gzip -9 -f "$D"/traces_*/*.json 2>/dev/null
exit 0
