#!/usr/bin/env bash
# The model as jobs: a llama-3-8b (2 layers) grid killed with kill -9 and resumed, recommend on its rows, --devices all, the size check.
# estimate: 900 s
set -u; D=$1
bash benchmarks/gpu/model_grid.sh "$D"
