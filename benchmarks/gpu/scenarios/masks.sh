#!/usr/bin/env bash
# Masks (causal, sliding window, documents, soft-capping) at S 8192 D 128 with torch's variants and other libraries; decode is its own scenario.
# estimate: 330 s
set -u; D=$1; T=$(mktemp -d)
OUT=$T MASKS_SKIP_DECODE=1 bash benchmarks/gpu/masks.sh
tar xzf "$T/masks.tgz" -C "$D" --strip-components=1
