#!/usr/bin/env bash
# What a serving loop looks like here: torch's switches, SDPA's choice, a decode loop eager / graph-replayed / captured, cuDNN per KV length, a paged gather, an eager Llama training trace.
# estimate: 150 s
set -u; D=$1
python3 benchmarks/gpu/serving_probe.py "$D"
