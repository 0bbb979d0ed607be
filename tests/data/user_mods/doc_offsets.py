"""A document mask as users often write it: document ids and each document's offset, causal inside a document.

Packed documents of 20, 30 and 14 tokens (a 64-token sequence).  ``doc_mask`` is a factory of the device, so
its lookup tensors live where the kernel runs."""

import torch

LENGTHS = (20, 30, 14)


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


def across_documents(b, h, q_idx, kv_idx):
    """Causal, ignoring the documents: equals no document mask."""
    return q_idx >= kv_idx


def sliding16(b, h, q_idx, kv_idx):
    return (q_idx >= kv_idx) & (q_idx - kv_idx < 16)


def every_other(b, h, q_idx, kv_idx):
    """Keeps alternate keys: no built-in does."""
    return (kv_idx % 2 == 0) | (q_idx == kv_idx)


def three_args(b, q_idx, kv_idx):
    return q_idx >= kv_idx


def raises(b, h, q_idx, kv_idx):
    raise RuntimeError("this mask is not finished")


def capped(score, b, h, q_idx, kv_idx):
    return 20.0 * torch.tanh(score / 20.0)


NOT_A_FUNCTION = 3
