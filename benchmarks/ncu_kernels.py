"""One call of each fused attention kernel at the GPU default case, for Nsight Compute.

    ncu --clock-control none --section Occupancy --section LaunchStats --csv --page details \
        -k regex:'flash_fwd|cudnn_generated|fmha_cutlass|triton_tem' python3 benchmarks/ncu_kernels.py

Its theoretical occupancy and limits check attnscope's occupancy calculator on real kernels
(tests/data/ncu/); its achieved occupancy is what a Kineto trace cannot give.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

B, H, S, D = 4, 16, 2048, 64
q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16) for _ in range(3))
for backend in (SDPBackend.FLASH_ATTENTION, SDPBackend.CUDNN_ATTENTION, SDPBackend.EFFICIENT_ATTENTION):
    with sdpa_kernel(backend):
        F.scaled_dot_product_attention(q, k, v, is_causal=True)
bm = create_block_mask(lambda b, h, i, j: i >= j, None, None, S, S, device="cuda")
torch.compile(flex_attention)(q, k, v, block_mask=bm)
torch.cuda.synchronize()
