"""A sliding-window mask as users write it: the 256 most recent keys, the query's own included."""

WINDOW = 256


def sliding_window(b, h, q_idx, kv_idx):
    return (kv_idx <= q_idx) & (q_idx - kv_idx < WINDOW)
