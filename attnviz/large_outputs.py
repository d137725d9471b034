"""Large outputs of the C kernel, on 2 MiB pages: a 32 MiB output paged in by 16 faults, not 8,192.

glibc hands out every allocation of 32 MiB or more (the most its mmap threshold rises to on a
64-bit machine, ``DEFAULT_MMAP_THRESHOLD_MAX``) as a fresh mapping and unmaps it when it is freed,
so a call that returns an output this large pays the kernel a page fault for each 4 KiB page it
writes, every call (smaller outputs come back from malloc's heap already paged in). At 8192x4x1024
on our AMD EPYC, one thread, a call took 24 ms, and 7.5 ms into an output already paged in (the
read of x alone: 5 ms). Asking Linux for transparent huge pages on such an output
(``MADV_HUGEPAGE``, what PyTorch does for all of its allocations when ``THP_MEM_ALLOC_ENABLE=1`` is
set) pages it in by one fault per 2 MiB: 11 ms a call, most of the rest being Linux zeroing the
new pages (a block kept from call to call would save that too, but would hold its memory between
calls, which a server shared by a class should not). The pages are faulted in by the calling
thread before the kernel's threads write them (a write to each, through torch, which lets go of
the GIL meanwhile): two threads faulting fresh huge pages at once took 8-104 ms a call on our
2-vCPU VM (16384x2x1024, quartiles 8-31 ms), one thread before them 11-15 ms (4 KiB pages: 23-40
ms).

The operator (``csrc/weighted_rows_op.cpp``, ``fresh_block``), fused's usual path, does this in
C++. ``empty_f32(rows, cols)`` does it for the ctypes path (``native``): ``torch.empty(rows, cols)``
but, from ``MIN_BYTES`` on and on Linux, in an anonymous private mapping of its own, advised for
huge pages and started on a 2 MiB line. The tensor owns the mapping (``torch.frombuffer`` keeps
it), which is unmapped when the tensor dies, as glibc's would be. Its storage cannot be resized;
nothing else differs. Where Linux gives no huge pages (``transparent_hugepage/enabled`` set to
``never``), it pages in as glibc's would.
"""

from __future__ import annotations

import ctypes
import mmap
import sys

import torch
from torch import Tensor

HUGE_PAGE = 2 << 20  # bytes: x86-64's and arm64's (4 KiB base) transparent huge page
MIN_BYTES = 32 << 20  # glibc's largest mmap threshold: from here every allocation is mapped afresh
MIN_FLOATS = MIN_BYTES // 4  # the same, in float32 numbers (``native._run`` compares B * H to it)

# Linux only: elsewhere malloc reuses large blocks on its own terms, and there is no MADV_HUGEPAGE
ADVISES = sys.platform.startswith("linux") and hasattr(mmap, "MADV_HUGEPAGE")


def empty_f32(rows: int, cols: int) -> Tensor:
    """An uninitialised float32 (rows, cols) tensor; from ``MIN_BYTES`` on, on huge pages."""
    count = rows * cols
    if count * 4 < MIN_BYTES or not ADVISES:
        return torch.empty(rows, cols, dtype=torch.float32)
    # a private mapping: a shared one is shmem, whose huge pages Linux gives only when told to
    whole = -(-count * 4 // HUGE_PAGE) * HUGE_PAGE  # its last huge page whole
    mapping = mmap.mmap(-1, whole + HUGE_PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    mapping.madvise(mmap.MADV_HUGEPAGE)
    start = -_address(mapping) % HUGE_PAGE  # a 2 MiB line: the first page can be a huge one
    out = torch.frombuffer(mapping, dtype=torch.float32, count=count, offset=start)
    out[:: HUGE_PAGE // 4].zero_()  # each page paged in now (see the docstring), without the GIL
    return out.view(rows, cols)


def _address(mapping: mmap.mmap) -> int:
    """Where ``mapping`` starts in memory (the ctypes view is dropped at once, so the mapping
    can still be closed by its owner)."""
    return ctypes.addressof(ctypes.c_char.from_buffer(mapping))
