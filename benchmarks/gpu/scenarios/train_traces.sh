#!/usr/bin/env bash
# Real training traces for analyze's speed against HTA: the Llama step with_stack (python_function events), and DDP on every GPU of the host, one trace per rank of one job.
# estimate: 150 s
set -u; D=$1
python3 benchmarks/gpu/train_traces.py "$D"
