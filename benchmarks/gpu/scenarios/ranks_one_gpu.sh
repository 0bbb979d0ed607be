#!/usr/bin/env bash
# A real multi-rank trace on a one-GPU host: the Llama training step by DDP, two ranks sharing the GPU (gloo reduces the gradients, NCCL refuses two ranks on one GPU), 5 profiled steps, one trace per rank of one job.
# estimate: 120 s
set -u; D=$1
timeout 300 python3 benchmarks/gpu/train_traces.py "$D" --no-stack --share-gpu --rank-steps 5
