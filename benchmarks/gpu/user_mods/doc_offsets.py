"""A document mask as users write it (offsets formulation): each token's document id, and each document's offset,
causal inside a document.  Packed documents of 1000, 1500, 600 and 996 tokens (S = 4096).

``doc_mask`` is a factory of the device (``attnscope run --mask-mod FILE:doc_mask``): its lookup tensors are built
where the kernel runs."""

import torch

LENGTHS = (1000, 1500, 600, 996)


def doc_mask(device):
    lengths = torch.tensor(LENGTHS, device=device)
    offsets = torch.nn.functional.pad(lengths.cumsum(0), (1, 0))
    doc = torch.repeat_interleave(torch.arange(len(LENGTHS), device=device), lengths)

    def mask_mod(b, h, q_idx, kv_idx):
        same_doc = doc[q_idx] == doc[kv_idx]
        q_in_doc = q_idx - offsets[doc[q_idx]]
        kv_in_doc = kv_idx - offsets[doc[kv_idx]]
        return same_doc & (q_in_doc >= kv_in_doc)

    return mask_mod
