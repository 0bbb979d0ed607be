#!/usr/bin/env bash
# The model as jobs: a llama-3-8b (2 layers) grid of sdpa, eager and flex_attention, prefill and train, killed with kill -9 and resumed; recommend on its rows; the size check.
# estimate: 300 s
set -u; D=$1
GRID_IMPL=${GRID_IMPL:-sdpa,eager,flex_attention} GRID_SEQ=${GRID_SEQ:-512,2048} GRID_BATCH=${GRID_BATCH:-1} \
  GRID_SKIP_DEVICES=${GRID_SKIP_DEVICES:-1} timeout 420 bash benchmarks/gpu/model_grid.sh "$D"
