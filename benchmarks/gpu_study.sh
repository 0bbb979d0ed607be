#!/usr/bin/env bash
# The H200 study behind docs/results/h200.md, in one device call:
#   bash benchmarks/gpu_study.sh OUTDIR
# Runs the study at the GPU default case and at B=1 H=32 S=4096 D=128 (traces kept: they
# become tests/data/h200/), a guess-first run, a GQA case, the CPU study under this torch,
# the probes behind the tables, Nsight Compute on the fused kernels, and the test suite.
set -uo pipefail
out=${1:?output directory}
mkdir -p "$out/traces_default" "$out/traces_big"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 KINETO_LOG_LEVEL=6
py=python3
run() { $py -m attnscope.cli.main "$@"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$out/nvidia_smi.txt" 2>&1
run variants > "$out/variants.txt" 2>&1
run run --variants all --kernels --json "$out/study_default.json" --trace-dir "$out/traces_default" \
    > "$out/study_default.txt" 2>&1
run run --variants all --batch 1 --heads 32 --seq 4096 --head-dim 128 --kernels \
    --json "$out/study_big.json" --trace-dir "$out/traces_big" > "$out/study_big.txt" 2>&1
run run --variants naive,naive_inplace,sdpa_math,sdpa_flash,sdpa_default \
    --guess examples/guess_study.toml --json "$out/guess.json" > "$out/guess.txt" 2>&1
run run --variants all --kv-heads 4 --json "$out/gqa.json" > "$out/gqa.txt" 2>&1
run run --device cpu --json "$out/cpu.json" > "$out/cpu.txt" 2>&1
$py benchmarks/gpu_probes.py > "$out/probes.txt" 2>&1
ncu --clock-control none --section Occupancy --section LaunchStats --csv --page details \
    -k 'regex:flash_fwd|cudnn_generated|fmha_cutlass|triton_tem' $py benchmarks/ncu_kernels.py \
    > "$out/ncu.csv" 2> "$out/ncu.err"
$py -m pytest -q -p no:cacheprovider tests > "$out/pytest.txt" 2>&1
tail -3 "$out/pytest.txt"
