"""The one measurement the tour adds to ``attnscope.api.run``: the device's copy bandwidth, the ceiling a
decode step is compared with.  Needs torch."""

from __future__ import annotations

import statistics
import time


def copy_bandwidth(device: str, nbytes: int) -> tuple[float, str]:
    """Bytes per second of ``dst.copy_(src)`` for an ``nbytes`` buffer (read + write counted), and how."""
    import torch

    n = max(1, nbytes // 4)
    src = torch.ones(n, dtype=torch.float32, device=device)
    dst = torch.empty_like(src)
    gpu = device.startswith("cuda")
    times: list[float] = []
    for i in range(12):
        if gpu:
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            dst.copy_(src)
            b.record()
            b.synchronize()
            dt = a.elapsed_time(b) / 1e3
        else:
            t0 = time.perf_counter()
            dst.copy_(src)
            dt = time.perf_counter() - t0
        if i >= 2:  # the first two warm the allocator and caches
            times.append(dt)
    med = statistics.median(times)
    how = (
        f"device copy of {4 * n / 2**20:,.0f} MiB, 2×bytes (read + write) ÷ median of {len(times)} "
        f"{'CUDA-event' if gpu else 'wall-clock'} times"
    )
    return 2 * 4 * n / med, how
