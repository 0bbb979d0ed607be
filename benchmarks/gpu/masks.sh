#!/usr/bin/env bash
# Masks, decode and external libraries on the GPU (about 4 minutes on an H200).
# Run from the repository root on the GPU machine; $OUT must be set.  Writes $OUT/masks.tgz.
#
# Wheels: if .whl/ holds wheels (attn_gym, flashinfer-python + apache-tvm-ffi, nvidia-cudnn-frontend,
# xformers, sageattention), each is installed into /tmp/site without its dependencies; one that fails
# to install is reported and the rest go on.  attn_gym is needed for every mask (pure Python, 1 MB).
#
# Cases (bf16, D=128, B=1 so FlashInfer's single-request API applies):
#   causal      H=16 S=8192 --mask causal          the baseline ranking
#   sliding     H=16 S=8192 --mask sliding:1024    Mistral-style window
#   document    H=16 S=8192 --mask document:1024×8 packed documents
#   decode      H=32 KV=8 Sq=1 Sk=8192 --mask causal_lower_right   one token against the cache, GQA
#   softcap     H=16 S=4096 --mask sliding:1024 --softcap 50        Gemma 2 style
# FlashInfer JIT-compiles each configuration on first use (~70 s for a prefill on the H200): only the
# causal prefill and the decode ask for it, to stay in budget.
set -u
T=/tmp/masks
rm -rf "$T" && mkdir -p "$T"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 KINETO_LOG_LEVEL=6
if [ -d .whl ]; then
    for w in .whl/*.whl; do
        [ -e "$w" ] || continue
        if python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site "$w" \
            >>"$T/pip.txt" 2>&1; then
            echo "installed $(basename "$w")"
        else
            echo "FAILED to install $(basename "$w") (see pip.txt); going on"
        fi
    done
    export PYTHONPATH=/tmp/site:$PYTHONPATH
fi
python3 - <<'EOF' 2>&1 | tee "$T/env.txt"
import importlib
import torch
gpu = torch.cuda.get_device_name() if torch.cuda.is_available() else "no GPU"
print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version(), gpu)
for m in ("attn_gym", "flashinfer", "cudnn", "xformers.ops", "sageattention", "flash_attn", "flash_attn_interface"):
    try:
        mod = importlib.import_module(m)
        print(f"{m}: ok {getattr(mod, '__version__', '')}")
    except Exception as e:  # noqa: BLE001
        print(f"{m}: {type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}")
EOF
python3 -c "import attn_gym" 2>/dev/null || echo "!! attn_gym is missing: the sliding, document and softcap cases \
will fail; carry attn_gym-0.0.17-py3-none-any.whl (1 MB) in .whl/"

DEV=${MASKS_DEVICE:-cuda}  # MASKS_DEVICE=cpu MASKS_SEQ=256: a quick smoke test of this script on a CPU
S=${MASKS_SEQ:-8192}
W=$((S / 8))
DOCS=$(python3 -c "print(','.join([str($S // 8)] * 8))")
TORCHV="naive,sdpa_math,sdpa_efficient,sdpa_flash,sdpa_cudnn,sdpa_default,flex,flex_compiled"
EXT="cudnn_frontend,sageattention,xformers,flash_attn2,flash_attn3"
LONG="--device $DEV --batch 1 --heads 16 --seq $S --head-dim 128 --dtype bf16 --budget 0.3 --kernels"

run() {  # name, time limit (s), attnscope run arguments...
    local name=$1 limit=$2
    shift 2
    local t0=$SECONDS
    timeout "$limit" python3 -m attnscope.cli.main run "$@" --json "$T/$name.json" >"$T/$name.txt" 2>&1
    echo "== $name: rc=$? in $((SECONDS - t0)) s"
    grep -E "^│" "$T/$name.txt" | cut -c1-200 | head -24
}

run causal 150 $LONG --mask causal --variants "$TORCHV,$EXT,flashinfer_prefill"
run sliding 75 $LONG --mask "sliding:$W" --variants "$TORCHV,$EXT"
run document 75 $LONG --mask "document:$DOCS" --variants "$TORCHV,$EXT"
[ -n "${MASKS_SKIP_DECODE:-}" ] || run decode 75 --device "$DEV" --batch 1 --heads 32 --kv-heads 8 --seq 1 --seq-kv "$S" --head-dim 128 --dtype bf16 \
    --mask causal_lower_right --budget 0.3 --kernels --trace-dir "$T/decode_traces" \
    --variants "$TORCHV,$EXT,flashinfer_decode"
run softcap 50 --device "$DEV" --batch 1 --heads 16 --seq $((S / 2)) --head-dim 128 --dtype bf16 --mask "sliding:$W" \
    --softcap 50 --budget 0.3 --variants "naive,sdpa_flash,flex_compiled,flash_attn2,cudnn_frontend"
# keep the tarball small: decode traces only for the fused variants
find "$T/decode_traces" -name 'naive*.json' -delete 2>/dev/null
find "$T/decode_traces" -name 'sdpa_math*.json' -delete 2>/dev/null
tar czf "$OUT/masks.tgz" -C /tmp masks && ls -la "$OUT/masks.tgz"
