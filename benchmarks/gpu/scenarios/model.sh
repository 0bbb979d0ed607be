#!/usr/bin/env bash
# attnscope model: Llama-3-8B cut to 2 layers, batch 2, seq 2048, prefill/decode/train, eager/sdpa/flex/flash_attention_2.
# estimate: 240 s
set -u; D=$1; T=$(mktemp -d)
OUT=$T bash benchmarks/gpu/model.sh
tar xzf "$T/model.tgz" -C "$D" --strip-components=1
