"""A C kernel for the CPU, compiled on first use: the float32 weighted row sum behind "fused".

    weighted[b, :] = sum over t of w[b, t] * x[b, t, :]        x: (B, T, H), w: (B, T) -> (B, H)

Why a C kernel: on the CPU the operation is bound by memory bandwidth, so the fastest method is
the one that streams x past the cores as fast as the machine can read it. The library kernels we
measured don't: ``torch.bmm`` (MKL) reaches about 55-75% of a plain read on our AMD EPYC, the
embedding-bag row sum 80-90%, OpenBLAS's gemv through NumPy ran near it only with its own spinning
threads, which then slowed every torch call after it. ``csrc/weighted_rows.c`` sums rows in one
of two ways, picked by where x sits (``mode``): where a thread's share fits in its L2, in tiles of
256 columns with the running sums in registers, the threads sharing a sentence by its columns;
beyond, in four stripes of rows read side by side (four long streams, which keep memory busy)
into running sums in L1, threads taking units of work as they come free. Rows that do not start
on a 64-byte line (H not a multiple of 16) are read as whole lines and moved into place by
permutes (``csrc/rows_off_lines.h``; short rows, 18-241 numbers, with their running sums in
registers). Reading whole lines reads the bytes beside x on its first and last line too; a small
x with subnormal numbers there (a malloc header past a small tensor's end reads as one) is
copied away from them first, as each multiply of one costs the CPU a microcode assist.

The same library holds the read limit (``attnviz.native_read``): a plain read of x in C, built
with the same flags, run on the same threads and cut the same way, into independent vector sums,
so that it is bound by memory and not by a chain of adds: in one stream, in four side by side, or
in four that ask for their lines ahead as the kernel's stripes may (``read_mode`` guesses one
stream where x fits in the last-level cache; ``attnviz.bench`` times all three on x in every
round and keeps the fastest, ``bench.floor.floor_ways``: near the cache's size four were the
faster). The benchmark times it as the floor that every method is compared with. (``x.sum()`` is
no floor: on an Intel Xeon we measured bmm and the kernel 20% faster than it.)

From beyond L2 the stripes may ask for each stripe's lines a little ahead of the loads
(``PREFETCH``): on some CPUs that keeps more of memory's lines in flight, on others it costs, so a
shape's first call times both ways and keeps the faster (``asks_ahead``).

- Build: compiled once per machine and cached, or a reason why not, in which case "fused" takes
  the embedding-bag path instead (``attnviz.native_build``: ``build()`` says which).
- Threads: OpenMP, ``torch.get_num_threads()`` of them, taking small units of work as they come
  free (``schedule(dynamic)``), so a thread that wakes late or shares its core with another
  program just takes fewer units; where x sits in the threads' L2, each thread takes the same
  units every call (``OWN_L2``), so that it reads what its own L2 kept. PyTorch's Linux wheels
  load their own ``libgomp.so.1`` first, and the loader then reuses it for this library, so the
  kernel runs on PyTorch's own (warm) OpenMP threads rather than starting a second set that
  would compete with them. (Python threads were tried first: PyTorch's OpenMP threads keep
  spinning for a while after each torch call and took their cores, costing up to 20%.) ctypes
  releases the GIL during the call.
- Outputs of 32 MiB and more sit on 2 MiB pages (``attnviz.large_outputs``: fewer page faults).
- Only float32, contiguous CPU tensors and no autograd: everything else goes elsewhere.
"""

from __future__ import annotations

import ctypes
import functools
import math
import time
from pathlib import Path

import torch
from torch import Tensor

from attnviz import large_outputs, native_build
from attnviz.errors import AttnvizError
from attnviz.native_build import Build as Build  # what build() reports, as native.Build
from attnviz.native_build import build

# How the work is cut (see plan): a thread gets at least MIN_NUMEL_PER_THREAD numbers of x (a
# second thread paid off from 2**16 numbers up, measured with warm threads); units of at most
# MAX_UNIT_NUMEL numbers (16 MiB), at least UNITS_PER_THREAD per thread; pieces of sentences of
# at least MIN_PIECE_ROWS rows, so that partial sums add little traffic.
MIN_NUMEL_PER_THREAD = 1 << 16
MAX_UNIT_NUMEL = 1 << 22
UNITS_PER_THREAD = 4
# In the cache, B not a multiple of the threads: whole sentences a thread where the largest share
# is at most UNEVEN_SHARE of an even one (B >= 7 on two threads), else each sentence cut by its
# rows (``plan``). Pieces of a few dozen rows read slowly, above all as stripes (plain C, two
# threads, medians of paired rounds: 33x65x127 0.68-0.74 of the read limit in pieces, 0.95-0.96
# whole; 7x100x300 0.71-0.73 and 0.96-0.99; 7x333x555 0.77-0.82 and 0.85-0.92); long ones do not,
# and there the uneven share costs more (5x1001x999: 0.89-0.94 in pieces, 0.82-0.85 whole).
UNEVEN_SHARE = (8, 7)
MIN_PIECE_ROWS = 32
# Where x sits decides how it is read (the kernel's and the read limit's ``mode``): a thread's
# share of x up to L2_SHARE times its L2 is summed in tiles (the running sums in registers; from
# L2 0.98-1.03 of a one-stream read, where four stripes reached 0.96), larger shares in stripes
# (at 2x L2 stripes 0.96 and tiles 0.86; tiles fell to 0.59-0.72 from L3 and 0.41 from DRAM). Where x fits
# in the last-level cache, one unit per thread: there more units cost more than the balance
# they buy (measured at 2 threads: 0.74-0.80 of the read limit with 4 units a thread, 0.86-0.95
# with one).
STRIPES, TILES, COLUMNS, PIECES = 0, 1, 2, 3
L2_SHARE = 1
# mode | PREFETCH: stripes ask for each stripe's lines a little ahead of the loads (weighted_rows.c).
# Where x comes from beyond L2 that is timed on the first call of each shape (``_time_ahead``):
# on an Intel Xeon (Emerald Rapids, 2026-12-05) it took the kernel from 0.81-0.95 of the read
# limit from DRAM to 0.97-1.01 on one and two threads, and changed nothing in the L3; in L2 it
# cost 8-10% (plain C), and on an AMD EPYC (Zen 4) in the L3 it had cost 25-40% (2026-12-03).
PREFETCH = 4
# mode | OWN_L2: where x sits in the threads' L2, each thread takes the same units on every call
# (csrc/threads.h), and so reads what its own L2 kept from the last call; the read limit too
# (native_read.call_mode)
OWN_L2 = 8
# mode | TWO_STRIPES, mode | WHOLE_ROWS: how the stripes read long rows, by where x sits
# (``stripe_bits``; measured in csrc/stripes.h, sum_rows_of): a row of each stripe and the
# running sums of its columns must stay in the L1 between two uses of the sums, or every step
# loads them from L2. Where x sits well inside the last-level cache (up to LLC_SHARE of it) and
# four stripes' rows and sums would take more than L1_SHARE of the L1, two stripes (H = 2048, 32
# KiB of L1, 8-10 MiB of x: 0.93-0.96 of the read limit, four 0.81-0.85). Nearer the cache's
# size, where the read limit itself falls towards memory's (on an AMD EPYC Zen 4 with 32 MiB of
# L3: 100 GB/s at 10 MiB, 75-79 from 12 MiB), four streams keep it busier (14-16 MiB: four
# 0.86-0.89, two 0.81-0.82). From DRAM, four stripes of whole rows (blocks of 16384 columns, not
# 2048: cutting the rows cuts the streams; H = 4096: 0.93, against 0.67).
TWO_STRIPES = 16
WHOLE_ROWS = 32
BLOCK_H = 2048  # the kernel's columns of running sums at a time, but with WHOLE_ROWS
# mode | block << BLOCK_SHIFT: the stripes' block of columns, for rows longer than BLOCK_H in the
# last-level cache, where blocks of BLOCK_H read slower (plain C, one thread, x of 6-8 MiB: H =
# 2304-4096 at 0.79-0.85 of the read limit). Whole rows, two stripes, where three rows fit in the
# L1 (two rows and their sums; H = 2304 0.91, 2560 0.87-0.89); else four stripes in even blocks
# of 1024 numbers (H = 3072, 4096, 5120, 8192: 0.86-0.90, and at 12-16 MiB 0.81-0.89 against
# 0.79-0.85), or, within LLC_SHARE, of 512 (H = 3584: 0.84-0.85 against 0.81-0.83; at 16 MiB
# 0.71-0.74 against 0.76-0.77).
BLOCK_SHIFT = 8
# mode | SENTENCE_STRIPES: from beyond the threads' L2, short rows (at most STRIPED_COLUMNS
# numbers, AVX-512) in sentences of at most a quarter of STRIPED_NUMEL numbers are read as four
# stripes of whole sentences, groups of up to STRIPED_NUMEL numbers at a time, row t of one
# sentence of each stripe a step (``striped_sentences`` in csrc/short_rows.h): four long streams,
# where a sentence's own four stripes are streams of a few KiB (from DRAM, plain C, medians, one
# thread: 2048x64x128, 4096x128x64 and 8192x32x64 0.75-0.89, 0.74-0.88 and 0.43-0.49 of the read
# limit before, 0.86-0.97, 0.96-0.99 and 0.86-0.95 so; rows off the lines, 16384x32x61,
# 32768x32x24 and 2048x64x100: 0.46, 0.34 and 0.66, so 0.93, 0.95 and 0.99). Each sentence is
# summed row after row into sums of its own: on the lines the bits tiles give it. Rows of more
# than SHORT_PAIR numbers as two stripes of sentences (2048x32x192 0.62-0.72 and 0.84-0.87;
# 1024x64x200 off the lines 0.74 and 0.90).
SENTENCE_STRIPES = 64
STRIPED_NUMEL = 1 << 20
# the longest rows (numbers) read so: four stripes of sentences up to SHORT_PAIR, two up to this
# (2 * QUAD_VECS vectors of 16 in csrc/short_rows.h: their sums in registers)
STRIPED_COLUMNS = 256
# From DRAM, sentences of at most LONG_STRIPED_ROWS rows of more than STRIPED_COLUMNS numbers, up
# to LONG_STRIPED_H, are read as four stripes of sentences too, their sums in the L1
# (``striped_long_sentences``, csrc/long_sentences.h: plain C, medians, one thread, 128 MiB,
# 6553x16x320 0.64 of the read limit as each sentence's own stripes, 0.80 so; 5461x16x384 0.69
# and 0.83; 7710x16x300, off the lines, 0.58 and 0.79; two threads 4096x16x512 0.83 and 0.92;
# rows of 513-1024 asking for their lines ahead as non-temporal, 6553x8x640 0.56 and 0.84,
# 2730x16x768 0.77 and 0.90, 5242x8x800 0.62 and 0.77), past LONG_WIDE_H only in sentences of at
# most LONG_WIDE_ROWS rows (1024x32x1024: 0.89 and 0.82). Not longer rows (1024x16x2048: 0.86 and
# 0.70), nor more rows (T = 128: 0.93-1.0 either way), nor in the cache (32x256x512 0.78-0.90 and
# 0.53-0.74).
LONG_STRIPED_H = 1024
LONG_STRIPED_ROWS = 32
LONG_WIDE_H = 768
LONG_WIDE_ROWS = 16
# sentences of at most BLOCK_ROWS rows of up to BLOCK_MAX_H numbers: each alone, blocks of columns in
# registers, the next sentence asked for ahead (``block_sentences``: long_sentences.h has the numbers)
BLOCK_ROWS = 8
BLOCK_MAX_H = 4096
# a sentence of at most FEW_ROWS rows of more than FEW_ROWS_COLUMNS numbers, in the cache, is
# summed two vectors of columns at a time down all its rows, the sums in registers (``few_rows``,
# csrc/weighted_rows.c: plain C, one thread, x in the L3, 64x16x768 0.77-0.80 of the read limit
# as stripes, 0.83-0.86 so; 64x16x777 0.57 and 0.71; 64x4x1024 0.51 and 0.73)
FEW_ROWS = 20
FEW_ROWS_COLUMNS = 256
FEW_ROWS_WAYS = 8  # nor more rows than this at one place on a page: they would share an L1 set
EVEN_BLOCK = 1024
L1_SHARE = 0.75
LLC_SHARE = 1 / 3
AHEAD_TRIES = 3  # timings of each way on a shape's first call: the faster best is kept
# untimed calls before them: x just made (torch.randn, a copy) is still on its way into the caches,
# and each call then ran faster than the one before (on an AMD EPYC in the L3, 4x128x4096: 500,
# 460, 350, 230, 140, 130 us), so the way timed second won: asking ahead was kept for 13 of 18
# shapes in the L3, though in 17 of them the calls after it were faster without (RESULTS.md)
AHEAD_WARMUP = 2
MAX_AHEAD_SHAPES = 1024  # a visitor trying every shape fills it; it is then emptied
_ahead: dict[tuple[int, ...], bool] = {}  # (B, T, H, threads, limits...) -> asks ahead
DEFAULT_L2_BYTES = 256 * 2**10  # where the machine does not say: the smallest L2 of a current CPU
DEFAULT_LLC_BYTES = 8 * 2**20
DEFAULT_L1_BYTES = 32 * 2**10


def available() -> bool:
    """True when the kernel is built and loaded (builds it on the first call)."""
    return build().ok


def _readable(x: Tensor, w: Tensor) -> bool:
    """What the kernel can read safely: float32 CPU tensors, x (B, T, H) contiguous, w (B, T)."""
    return (
        x.device.type == w.device.type == "cpu"
        and x.dtype == w.dtype == torch.float32
        and x.dim() == 3
        and x.is_contiguous()
        and w.shape == x.shape[:2]
    )


def usable(x: Tensor, w: Tensor) -> bool:
    """True when ``weighted_rows(x, w)`` applies: float32 contiguous CPU tensors, no autograd,
    and the kernel built (the first call builds it)."""
    return (
        _readable(x, w)
        and not (torch.is_grad_enabled() and (x.requires_grad or w.requires_grad))
        and available()
    )


def plan(b: int, t: int, h: int, threads: int) -> tuple[int, int, int]:
    """(threads used, group, split) for x of (B, T, H): how ``weighted_rows`` cuts the work.

    One thread for small inputs (under MIN_NUMEL_PER_THREAD numbers per thread). Otherwise whole
    sentences per unit (split = 1) when the sentences share out evenly (B a multiple of the
    threads), or nearly (in the cache, no share over UNEVEN_SHARE of an even one; in L2 each
    thread then takes the same sentences every call), or there are at least UNITS_PER_THREAD of
    them per thread, ``group`` sentences per unit and no unit over MAX_UNIT_NUMEL numbers; else
    each sentence cut into ``split`` pieces of at least MIN_PIECE_ROWS rows, whose partial sums
    are added up afterwards, so that threads finish within a small unit of each other. (Cached:
    the app and the benchmarks ask for the same few shapes again and again, and each microsecond
    shows at small sizes.)

    Sentences of more than MAX_UNIT_NUMEL numbers are cut into pieces of at most that once x
    comes from DRAM, one thread included: a sentence's four stripes are then streams 4 MiB apart
    or less, not a quarter of the sentence. 1x65536x1024 (256 MiB) on one thread, kernel and read
    through ctypes, medians of 9: 0.87-0.89 of the read limit whole, 0.99 in 16 pieces.
    """
    return _plan(b, t, h, threads, MIN_NUMEL_PER_THREAD, MAX_UNIT_NUMEL, MIN_PIECE_ROWS)


@functools.lru_cache(maxsize=256)
def _plan(
    b: int, t: int, h: int, threads: int, min_numel: int, max_unit: int, min_rows: int
) -> tuple[int, int, int]:
    n = max(1, min(threads, b * t * h // min_numel))
    if b * t == 0 or h == 0:
        return 1, max(1, b), 1
    if n == 1:  # from DRAM, sentences in pieces of at most max_unit numbers (see the docstring)
        split = 1 if _in_llc(b * t * h) else max(1, min(-(-t * h // max_unit), t // min_rows))
        return (1, max(1, b), 1) if split == 1 else (1, 1, split)
    if _in_llc(b * t * h):  # one equal unit per thread (or B * split of them, shared evenly)
        g = math.gcd(b, n)
        split = max(1, min(n // g, t // min_rows))
        if split > 1 and -(-b // n) * n * UNEVEN_SHARE[1] <= b * UNEVEN_SHARE[0]:
            split = 1  # whole sentences, a share at most one sentence more than another's
        group = 1
        if split == 1 and b % n == 0:
            group = b // n
        elif split == 1 and not _in_l2(b * t * h, n):  # taken as they come free: small units
            group = max(1, b // (UNITS_PER_THREAD * n))  # balance (in L2 each its own share)
        units = math.ceil(b / group) if split == 1 else b * split
        return min(n, units), group, split
    want = UNITS_PER_THREAD * n
    split = 1 if (b >= want or b % n == 0) else math.ceil(want / b)
    split = max(split, math.ceil(t * h / max_unit))
    split = max(1, min(split, t // min_rows))
    group = 1
    if split == 1:
        group = max(1, min(b // want, max_unit // (t * h)))
    units = math.ceil(b / group) if split == 1 else b * split
    return min(n, units), group, split


def cache_bytes(level: int) -> int | None:
    """The size of this machine's level-``level`` data cache, per core for L1 and L2 (CPU 0's,
    from Linux's sysfs), or None where the machine does not say."""
    root = Path("/sys/devices/system/cpu/cpu0/cache")
    try:
        indexes = sorted(root.glob("index*"))
    except OSError:
        return None
    for index in indexes:
        try:
            if int((index / "level").read_text()) != level:
                continue
            if (index / "type").read_text().strip() not in ("Data", "Unified"):
                continue
            text = (index / "size").read_text().strip().upper()
            mult = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1:], 1)
            return int(text.rstrip("KMG")) * mult
        except (OSError, ValueError):
            continue
    return None


@functools.cache
def _caches() -> tuple[int, int]:
    """(L2 bytes per core, last-level cache bytes), read once."""
    l2 = cache_bytes(2) or DEFAULT_L2_BYTES
    return l2, cache_bytes(3) or max(l2, DEFAULT_LLC_BYTES)


def _in_l2(numel: int, threads: int) -> bool:
    """x of numel float32 numbers, shared by threads, sits in their L2 (see L2_SHARE)."""
    return numel * 4 <= L2_SHARE * _caches()[0] * threads


@functools.cache
def _l1() -> int:
    """L1 data cache bytes per core, read once."""
    return cache_bytes(1) or DEFAULT_L1_BYTES


def stripe_bits(numel: int, cols: int) -> int:
    """TWO_STRIPES, WHOLE_ROWS and the stripes' block (or none of them) for x of ``numel``
    numbers, summed in stripes of ``cols`` columns (a whole row, or a thread's chunk of it in
    COLUMNS mode): from beyond the last-level cache WHOLE_ROWS (it changes only rows of more than
    BLOCK_H numbers). In it, rows longer than BLOCK_H in a block of their own (see BLOCK_SHIFT):
    whole, as two stripes, where x is within LLC_SHARE of the cache and three rows fit in the L1;
    else as four stripes in even blocks of EVEN_BLOCK numbers, or within LLC_SHARE of half as
    many, where they cut the row. Else, within LLC_SHARE, TWO_STRIPES where a row of each of four
    stripes and their running sums (five
    blocks of up to BLOCK_H numbers) would take more than L1_SHARE of the L1 (see TWO_STRIPES; in
    L2 too: 1x60x4097 0.91 and 0.75 against 0.78 and 0.70 on one thread, 0.93 and 0.90 against
    0.79 and 0.72 by columns on two; 1x100x2049 0.82-0.86 against 0.78)."""
    if not _in_llc(numel):
        return WHOLE_ROWS
    well_inside = numel * 4 <= LLC_SHARE * _caches()[1]
    if cols > BLOCK_H:  # longer than a block: how to cut them (see BLOCK_SHIFT)
        if well_inside and 3 * 4 * cols <= _l1():
            return TWO_STRIPES | -(-cols // 16) * 16 << BLOCK_SHIFT  # whole lines: chunks too
        if cols % EVEN_BLOCK == 0:
            return EVEN_BLOCK << BLOCK_SHIFT
        if well_inside and cols % (EVEN_BLOCK // 2) == 0:
            return EVEN_BLOCK // 2 << BLOCK_SHIFT
    if well_inside and 5 * 4 * min(cols, BLOCK_H) > L1_SHARE * _l1():
        return TWO_STRIPES
    return 0


def _stripes_sentences(b: int, t: int, h: int, n: int, group: int, split: int) -> bool:
    """Whether stripes read x of (B, T, H) on ``n`` threads, cut into units of ``group`` sentences
    (``split`` pieces each), as four stripes of whole sentences (see SENTENCE_STRIPES): from beyond
    the threads' L2, rows of at most STRIPED_COLUMNS numbers (AVX-512; off the 64-byte lines
    too where the kernel reads them by straddling loads: ``_realigns``), or from DRAM, sentences
    of at most LONG_STRIPED_ROWS rows of up to LONG_STRIPED_H numbers (LONG_WIDE_ROWS past
    LONG_WIDE_H; on the lines or off them), or of at most BLOCK_ROWS rows of up to BLOCK_MAX_H;
    sentences of at most a quarter of STRIPED_NUMEL, whole sentences a unit, at least four of them
    (the kernel checks the same, but for the rows' count and where x sits)."""
    short = h <= STRIPED_COLUMNS and (h % 16 == 0 or _realigns())
    rows = LONG_STRIPED_ROWS if h <= LONG_WIDE_H else LONG_WIDE_ROWS
    long = (
        h > STRIPED_COLUMNS
        and (t <= rows if h <= LONG_STRIPED_H else h <= BLOCK_MAX_H and t <= BLOCK_ROWS)
        and not _in_llc(b * t * h)
    )
    return (
        not _in_l2(b * t * h, n)
        and (short or long)
        and _lanes() >= 16
        and 4 * t * h <= STRIPED_NUMEL
        and split == 1
        and min(group, b) >= 4
    )


def _in_llc(numel: int) -> bool:
    """x of numel float32 numbers fits in the last-level cache."""
    return numel * 4 <= _caches()[1]


# the longest rows (numbers) that tiles sum two sentences at a time (PAIR_VECS vectors of 16 in
# attnviz/csrc/weighted_rows.c): TILES for them in the last-level cache too (``mode``)
SHORT_PAIR = 128


def mode(b: int, t: int, h: int, threads: int) -> int:
    """How ``weighted_rows`` sums rows for x of (B, T, H) on ``threads``: TILES where each
    thread's share sits in its L2 and each thread can have whole tiles of columns of its own
    (``tile_plan``), else STRIPES (see L2_SHARE). Where the threads' shares sit in their L2 but
    rows on the lines hold too few whole tiles to cut by columns (one sentence of H under 2 * TILE
    on two threads), PIECES: the sentence's rows cut into pieces as in STRIPES (``plan``), each
    piece summed as tiles sum a whole sentence, one stream (1x2048x128, 1x1024x256, 1x4096x112,
    1x1024x128 and 1x8192x64 on two threads, plain C, paired in one process: 0.89-0.96 of the
    read limit, stripes 0.83-0.94; H = 320-384, 0.78-0.92 against 0.30-0.39).

    Without AVX-512 (``_lanes``), never tiles: their 8 running sums in registers, one add each per
    row, read 0.68-0.80 of the read limit in L2 on an AVX2 host (EPYC Zen 3, plain C), stripes
    0.92-0.95 for whole sentences a thread. One sentence on two threads is then cut by its rows
    (``plan``): 1x256x1024 and 1x128x1024, 0.89-0.95 of the read limit, tiles 0.69-0.78 and each
    thread's own columns in stripes 0.60-0.71 (paired in one process, kernel and read through
    ctypes, after the cut pieces stopped waiting at a barrier to be added).
    Where the kernel reads rows off the 64-byte lines as whole lines (H not a multiple of 16),
    stripes in L2 too: 0.91 of the read limit there against tiles' 0.75 (3x61x777, one thread);
    on several threads the stripes of each thread's own columns (COLUMNS, cut as tiles are), as
    the rows of a sentence cut into pieces left stripes too short (1x250x777 on two threads: 0.67
    of the read limit, 0.90 by columns).
    Rows shorter than a tile, on the lines, are TILES where a thread sums whole sentences: each row
    in turn as one run, the sums in registers (``short_run``; 16x128x128: 0.91, stripes 0.90).
    Rows of at most SHORT_PAIR numbers on the lines are TILES in the last-level cache too, where
    a thread sums whole sentences: two at a time (``short_run_pair``), consecutive sentences read
    as one stream, against stripes of a few KiB each (plain C, paired, best blocks: 256x128x64
    0.93 of the read limit against 0.86-0.87, 128x256x128 0.96 against 0.90-0.92, 512x64x32
    0.83 against 0.73-0.79; two threads 256x128x64 0.93 against 0.87, 64x512x128 0.98 against
    0.92; from DRAM no better, 0.76-0.85 both ways). Where at least four whole sentences of rows
    of at most STRIPED_COLUMNS numbers (on the lines or off them) go to each unit, STRIPES of whole sentences instead, in the
    cache as from DRAM (SENTENCE_STRIPES; plain C, medians, one thread: 512x64x32 0.85-0.87 of the
    read limit as tiles, 0.91-0.92 so, 1024x64x64 (16 MiB) 0.85 and 0.89, off the lines
    1024x64x100 0.61 and 0.93 as stripes of a sentence's rows; 2048x16x64 0.82 and 0.80-0.87)."""
    n, group, split = plan(b, t, h, threads)
    tile = _tile()
    if not tile:
        return STRIPES
    if not _in_l2(b * t * h, n):
        if _stripes_sentences(b, t, h, n, group, split):
            return STRIPES
        short = h % 16 == 0 and h <= SHORT_PAIR and _lanes() >= 16 and _in_llc(b * t * h)
        return TILES if short and tile_plan(b, n)[1] == 1 else STRIPES
    if _lanes() < 16:  # tiles' 8 sums in registers: 0.68-0.80 of the read limit in L2
        return STRIPES
    tiles = max(h // tile, int(h % 16 == 0))  # a short row on the lines: one run
    if tile_plan(b, n)[1] > tiles:  # too few whole tiles for a chunk of columns a thread
        return PIECES if h % 16 == 0 else STRIPES
    if h % 16 and _realigns():
        return COLUMNS if n > 1 else STRIPES
    return TILES


def tile_plan(b: int, threads: int) -> tuple[int, int]:
    """(group, chunks) in TILES and COLUMNS modes: units of ``group`` sentences times one of
    ``chunks`` chunks of a sentence's columns, exactly one unit per thread (units = gcd(B, n) *
    n / gcd(B, n)):
    B = 1 on 2 threads is one sentence cut in two by its columns, B = 3 on 2 threads the three
    sentences' first and second halves."""
    g = math.gcd(b, threads)
    return b // g, threads // g


def _tile() -> int:
    """Columns of the kernel's tiles (0 where the kernel is not built)."""
    lib = native_build._build()[1]
    return int(lib.weighted_rows_tile()) if lib is not None else 0


def _lanes() -> int:
    """Floats per vector register in the kernel's build: 16 with AVX-512, 8 with AVX2, 4 with
    SSE or NEON (0 where the kernel is not built)."""
    lib = native_build._build()[1]
    return int(lib.weighted_rows_lanes()) if lib is not None else 0


def _realigns() -> bool:
    """True where the kernel reads rows off the 64-byte lines as whole lines (AVX-512, GCC)."""
    lib = native_build._build()[1]
    return bool(lib.weighted_rows_realigns()) if lib is not None else False


@functools.lru_cache(maxsize=256)
def _call_shape(
    b: int, t: int, h: int, threads: int, *limits: int, ahead: bool = False
) -> tuple[ctypes.Array, int]:
    """The kernel's shape argument {B, T, H, group, split, threads, mode} as a C array, made once
    per shape, thread count and plan limits (the kernel only reads it), and how many partial
    sums per sentence it needs (the rows' split in STRIPES mode, none where columns are cut).
    ``ahead``: the stripes ask for their lines ahead (PREFETCH; STRIPES only). Where x sits in the
    threads' L2, each thread takes the same units every call (OWN_L2)."""
    n, group, split = _plan(b, t, h, threads, *limits)
    kind = mode(b, t, h, threads)
    if kind in (TILES, COLUMNS):
        (group, split), rows_split = tile_plan(b, n), 1  # columns cut: no partial sums
        chunk = (-(-h // split) + 15) // 16 * 16  # the widest chunk, as the kernel cuts them
        kind |= stripe_bits(b * t * h, chunk) if kind == COLUMNS else 0
    else:
        rows_split = split
        kind |= PREFETCH if ahead and kind == STRIPES else 0
        kind |= stripe_bits(b * t * h, h) if kind & 3 == STRIPES else 0
        striped = kind & 3 == STRIPES and _stripes_sentences(b, t, h, n, group, split)
        kind |= SENTENCE_STRIPES if striped else 0
    kind |= OWN_L2 if n > 1 and _in_l2(b * t * h, n) else 0
    return (ctypes.c_long * 7)(b, t, h, group, split, n, kind), rows_split


def _limits() -> tuple[int, int, int]:
    return MIN_NUMEL_PER_THREAD, MAX_UNIT_NUMEL, MIN_PIECE_ROWS


def few_rows(b: int, t: int, h: int, threads: int) -> bool:
    """Whether the kernel sums each two vectors of a sentence's columns down all its rows at once
    (``few_rows`` in csrc/weighted_rows.c): sentences of at most FEW_ROWS rows longer than
    FEW_ROWS_COLUMNS numbers (a thread's chunk of them where threads share columns), summed in
    stripes or by columns in the cache, no more than FEW_ROWS_WAYS of them at one place on a
    4 KiB page."""
    hb = h * 4 % 4096
    if t > FEW_ROWS or t * (hb & -hb if hb else 4096) > FEW_ROWS_WAYS * 4096:  # see the C
        return False
    call = _call_shape(b, t, h, threads, *_limits())[0]
    kind = call[6] & 3
    if kind not in (STRIPES, COLUMNS) or call[6] & WHOLE_ROWS:
        return False
    cols = h if kind == STRIPES else min(h, (-(-h // call[4]) + 15) // 16 * 16)
    return cols > FEW_ROWS_COLUMNS


def may_ask_ahead(b: int, t: int, h: int, threads: int) -> bool:
    """Whether asking for lines ahead is worth timing for x of (B, T, H): summed in stripes that
    can (rows of whole pairs of vectors, longer than the short rows kept in registers, or rows off
    the 64-byte lines read as whole lines), from beyond the threads' L2 (in L2 it only costs: the
    lines are there already)."""
    lanes = _lanes()
    whole_pairs = lanes and h % (2 * lanes) == 0 and h > _tile()
    if not (whole_pairs or (h % 16 and _realigns())):
        return False
    n, group, split = plan(b, t, h, threads)
    if _stripes_sentences(b, t, h, n, group, split):  # stripes of sentences: they never ask
        return False
    if few_rows(b, t, h, threads):  # nor does few_rows
        return False
    return mode(b, t, h, threads) == STRIPES and not _in_l2(b * t * h, n)


def asks_ahead(b: int, t: int, h: int, threads: int) -> bool | None:
    """Whether the kernel asks for x's lines ahead for this shape: measured on its first call
    (``_time_ahead``); None where that call has not come yet, False where it is not worth it."""
    if not may_ask_ahead(b, t, h, threads):
        return False
    return _ahead.get((b, t, h, threads, *_limits()))


def _time_ahead(lib: ctypes.CDLL, args: tuple, b: int, t: int, h: int, threads: int) -> None:
    """Time the kernel on these arguments (pointers to x, w, out, partial) with and without
    asking ahead, after AHEAD_WARMUP calls untimed, AHEAD_TRIES times each, which goes first
    changing every time, and keep the faster (``_ahead``): the answer is the same to the bit
    either way (only the loads' timing changes), and the last call leaves it in out."""
    limits = _limits()
    ways = [_call_shape(b, t, h, threads, *limits, ahead=a)[0] for a in (False, True)]
    for _ in range(AHEAD_WARMUP):
        lib.weighted_rows_f32(*args, ways[0])
    best = [math.inf, math.inf]
    for k in range(AHEAD_TRIES):
        for i in (0, 1) if k % 2 == 0 else (1, 0):
            t0 = time.perf_counter()
            lib.weighted_rows_f32(*args, ways[i])
            best[i] = min(best[i], time.perf_counter() - t0)
    if len(_ahead) >= MAX_AHEAD_SHAPES:
        _ahead.clear()
    _ahead[(b, t, h, threads, *limits)] = best[1] < best[0]


def call_plan(b: int, t: int, h: int, threads: int) -> tuple[ctypes.Array, int]:
    """The kernel's shape argument for x of (B, T, H) on ``threads`` threads and how many partial
    sums per sentence it needs, with today's limits (``native_op`` hands it to the operator)."""
    ahead = bool(asks_ahead(b, t, h, threads))
    return _call_shape(b, t, h, threads, *_limits(), ahead=ahead)


def weighted_rows(x: Tensor, w: Tensor, *, threads: int | None = None) -> Tensor:
    """x: (B, T, H) float32 contiguous, w: (B, T) float32 -> (B, H) by the C kernel.

    Runs on ``threads`` OpenMP threads (default: ``torch.get_num_threads()``), which take units
    of work as they come free (see ``plan``). Raises RuntimeError when the kernel could not be
    built (``build().detail`` says why); check ``usable`` first.
    """
    # the kernel trusts its pointers: check what it will read (O(1), shapes and types only)
    if not _readable(x, w):
        raise AttnvizError(
            f"weighted_rows needs float32 CPU tensors, x (B, T, H) contiguous and w (B, T); got "
            f"x {tuple(x.shape)} {x.dtype} on {x.device} and w {tuple(w.shape)} {w.dtype} on "
            f"{w.device}."
        )
    built, lib = native_build._build()
    if lib is None:
        raise RuntimeError(f"the C kernel is not available: {built.detail}")
    b, t, h = x.shape
    return _run(lib, x, w, b, t, h, threads or torch.get_num_threads())


def _run(lib: ctypes.CDLL, x: Tensor, w: Tensor, b: int, t: int, h: int, threads: int) -> Tensor:
    """The call itself, for inputs already checked (``weighted_rows``, ``try_weighted_rows``)."""
    if not w.is_contiguous():
        w = w.contiguous()  # (B,T)
    ahead = asks_ahead(b, t, h, threads)
    shape, split = _call_shape(b, t, h, threads, *_limits(), ahead=bool(ahead))
    if b * h >= large_outputs.MIN_FLOATS:  # 32 MiB and more: on huge pages, fewer faults
        out = large_outputs.empty_f32(b, h)  # (B,H)
        partial = torch.empty(b, split, h, dtype=torch.float32) if split > 1 else out
    elif torch.get_default_dtype() is torch.float32:  # ints only: torch parses them ~1 µs sooner
        out = torch.empty(b, h)  # (B,H)
        partial = torch.empty(b, split, h) if split > 1 else out  # (B,S,H)
    else:
        out = torch.empty(b, h, dtype=torch.float32)
        partial = torch.empty(b, split, h, dtype=torch.float32) if split > 1 else out
    args = (x.data_ptr(), w.data_ptr(), out.data_ptr(), partial.data_ptr())
    if ahead is None:  # this shape's first call from beyond L2: time both ways
        _time_ahead(lib, args, b, t, h, threads)
    else:
        lib.weighted_rows_f32(*args, shape)
    return out


def try_weighted_rows(x: Tensor, w: Tensor) -> Tensor | None:
    """``weighted_rows(x, w)`` when the kernel applies (``usable``), else None: one check of the
    inputs instead of two on the path ``fused`` takes for every call, in the order that costs
    least (at 1 MiB in L2 a call takes 10-20 µs, and each check ~0.1 µs of it)."""
    f32 = torch.float32
    if x.dtype is not f32 or w.dtype is not f32 or not (x.is_cpu and w.is_cpu):
        return None
    shape, bt = x.shape, w.shape
    if len(shape) != 3 or len(bt) != 2 or not x.is_contiguous():
        return None
    b, t, h = shape
    if bt[0] != b or bt[1] != t:
        return None
    if (x.requires_grad or w.requires_grad) and torch.is_grad_enabled():
        return None
    built = native_build._built
    lib = built[1] if built is not None else native_build._build()[1]
    if lib is None:
        return None
    return _run(lib, x, w, b, t, h, torch.get_num_threads())
