#!/usr/bin/env bash
# The H200 study behind docs/results/h200.md, in one device call:
#   bash benchmarks/gpu_study.sh OUTDIR
# Runs the study at the GPU default case and at B=1 H=32 S=4096 D=128, keeps the traces
# of the default case (they become tests/data/h200/), and the probes behind the tables.
set -uo pipefail
out=${1:?output directory}
mkdir -p "$out/traces_default" "$out/traces_big"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 KINETO_LOG_LEVEL=6
py=python3
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$out/nvidia_smi.txt" 2>&1
$py -m attnscope.cli variants 2>&1 | tee "$out/variants.txt"
$py -m attnscope.cli run --variants all --kernels --json "$out/study_default.json" \
    --trace-dir "$out/traces_default" 2>&1 | tee "$out/study_default.txt"
$py -m attnscope.cli run --variants all --batch 1 --heads 32 --seq 4096 --head-dim 128 --kernels \
    --json "$out/study_big.json" --trace-dir "$out/traces_big" 2>&1 | tee "$out/study_big.txt"
$py benchmarks/gpu_probes.py 2>&1 | tee "$out/probes.txt"
