"""The C kernel's work plan (attnviz.native.plan, mode): how it cuts the work among threads and
which way it sums rows, by where x sits (the threads' L2, the last-level cache, memory), and that
the plans it makes sum right. The kernel itself: tests/test_native.py."""

import pytest
from hypothesis import given
from hypothesis import strategies as st
from torch.testing import assert_close

from attnviz import native, native_read
from tests.test_native import expected, needs_kernel, random_inputs

# x in the threads' L2, in the last-level cache past L2, and past the last-level cache
WHERE = {"L2": (2**22, 2**25), "LLC": (2**10, 2**30), "DRAM": (2**10, 2**10)}


@needs_kernel
@pytest.mark.parametrize(
    ("shape", "split", "grouped", "where"),
    [
        ((1, 1000, 33), True, False, "L2"),
        ((5, 100, 70), True, False, "L2"),  # 5 sentences do not share out evenly over 3 threads
        ((3, 8, 7), False, False, "L2"),  # 3 do: one each, no partial sums to add
        ((63, 3, 5), False, True, "L2"),  # 21 each, a unit a thread
        ((64, 3, 5), False, False, "L2"),  # 22, 21 and 21: whole sentences, each thread its own
        ((64, 3, 5), False, True, "LLC"),  # units of a few sentences, taken as they come free
        (
            (70, 40, 33),
            True,
            False,
            "DRAM",
        ),  # more sentences cut than the kernel counts on its stack
    ],
)
def test_plan_paths_are_exercised(shape, split, grouped, where, fine_grained, caches):
    caches(*WHERE[where])
    n, group, pieces = native.plan(*shape, 3)
    assert n > 1
    assert (pieces > 1) == split and (group > 1) == grouped


@needs_kernel
@pytest.mark.parametrize(("b", "pieces"), [(7, False), (33, False), (5, True), (3, True)])
def test_in_the_cache_sentences_stay_whole_where_they_share_out_nearly_evenly(
    b, pieces, fine_grained, caches
):
    """Two threads: B >= 7 whole sentences a thread (one share at most a sentence more than the
    other), fewer each cut by its rows, in L2 and in the last-level cache alike."""
    for where in ("L2", "LLC"):
        caches(*WHERE[where])
        n, group, split = native.plan(b, 64, 256, 2)
        assert n == 2 and (split > 1) == pieces, (where, group, split)
        call, _ = native._call_shape(b, 64, 256, 2, *native._limits())
        assert bool(call[6] & native.OWN_L2) == (where == "L2")
        if not pieces and where == "L2":  # each thread the same share: a sentence a unit
            assert group == 1
        x, w = random_inputs(b, 64, 256, seed=b)
        assert_close(native.weighted_rows(x, w, threads=2), expected(x, w), rtol=1e-5, atol=1e-4)


@needs_kernel
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_many_sentences_cut_into_pieces_are_each_added_once(threads, fine_grained, caches):
    """Each sentence's pieces are added by the thread that finishes its last one, whose count the
    kernel keeps on its stack for up to 64 sentences and in memory of its own beyond."""
    caches(*WHERE["DRAM"])  # sentences longer than MAX_UNIT_NUMEL: cut into pieces
    for b in (61, 65, 71):
        x, w = random_inputs(b, 40, 33, seed=b + threads)
        assert native.plan(b, 40, 33, threads)[2] > 1 or threads == 1
        assert_close(
            native.weighted_rows(x, w, threads=threads), expected(x, w), rtol=1e-5, atol=1e-4
        )


@needs_kernel
def test_one_thread_cuts_long_sentences_from_dram_into_pieces(monkeypatch):
    def caches(llc_bytes):  # plans are cached by shape, not by the caches' sizes
        monkeypatch.setattr(native, "_caches", lambda: (2**10, llc_bytes))
        native._plan.cache_clear()
        native._call_shape.cache_clear()

    monkeypatch.setattr(native, "MAX_UNIT_NUMEL", 256)
    monkeypatch.setattr(native, "MIN_PIECE_ROWS", 2)
    try:
        caches(2**30)
        assert native.plan(1, 300, 33, 1) == (1, 1, 1)  # in the last-level cache: whole
        caches(2**12)  # x is past a 4 KiB "L3"
        assert native.plan(1, 300, 33, 1) == (1, 1, 39)  # ceil(300 * 33 / 256) pieces
        assert native.plan(2, 7, 33, 1) == (1, 2, 1)  # 231 numbers a sentence: whole
        for shape in ((1, 300, 33), (3, 101, 70)):
            x, w = random_inputs(*shape, seed=sum(shape))
            assert native.plan(*shape, 1)[2] > 1
            got = native.weighted_rows(x, w, threads=1)
            assert_close(got, expected(x, w), rtol=1e-5, atol=1e-4)
    finally:
        native._plan.cache_clear()
        native._call_shape.cache_clear()


@given(
    b=st.integers(1, 300),
    t=st.integers(1, 5000),
    h=st.integers(1, 5000),
    threads=st.integers(1, 64),
)
def test_plan_gives_valid_units(b, t, h, threads):
    n, group, split = native.plan(b, t, h, threads)
    assert 1 <= n <= threads and group >= 1 and split >= 1
    assert split == 1 or group == 1
    assert split <= max(1, t // native.MIN_PIECE_ROWS)
    units = -(-b // group) if split == 1 else b * split
    assert units >= n  # no thread without work
    if b * t * h < 2 * native.MIN_NUMEL_PER_THREAD:
        assert n == 1  # small inputs stay on one thread


@needs_kernel
def test_rows_are_summed_in_tiles_in_l2_and_in_stripes_beyond(monkeypatch):
    monkeypatch.setattr(native, "_caches", lambda: (2**20, 32 * 2**20))  # 1 MiB L2, 32 MiB L3
    assert native._lanes() in (4, 8, 16)  # the build's vectors: SSE/NEON, AVX2, AVX-512
    monkeypatch.setattr(native, "_lanes", lambda: 16)  # AVX-512
    tile = native._tile()
    assert tile >= 32
    assert native.mode(4, 64, 1024, 1) == native.TILES  # 1 MiB, one thread
    assert native.mode(4, 64, 1024, 2) == native.TILES
    assert native.mode(48, 512, 1024, 2) == native.STRIPES  # 96 MiB
    assert native.mode(64, 64, tile - 1, 1) == native.STRIPES  # no whole tile in a row ...
    assert native.mode(16, 128, 128, 1) == native.TILES  # ... short rows on the lines: one run
    assert native.mode(16, 128, 128, 2) == native.TILES  # ... of whole sentences a thread
    # ... one sentence (or three) on two threads: too few whole tiles to cut it by its columns,
    # so its rows are cut, each piece summed as tiles sum a sentence
    half = tile // 2
    assert native.mode(1, 2**17 // half, half, 2) == native.PIECES  # 512 KiB
    assert native.mode(3, 2**16 // half, half, 2) == native.PIECES
    assert native.mode(1, 2**19 // tile, tile, 2) == native.PIECES  # one tile a row
    assert native.mode(1, 2**18 // tile, 2 * tile, 2) == native.TILES  # two: one a thread
    assert native.mode(1, 2**20 // half, half, 2) == native.STRIPES  # 4 MiB: past their L2
    assert native.mode(16, 128, 100, 1) == native.STRIPES  # ... off the lines
    # short rows on the lines in the last-level cache too, two sentences at a time, where a unit
    # has fewer than four whole sentences (else stripes of sentences); not longer rows
    assert native.mode(2, 4096, 64, 2) == native.TILES  # 2 MiB: a sentence a thread
    assert native.mode(256, 128, 64, 1) == native.mode(64, 512, 128, 2) == native.STRIPES
    assert native.mode(64, 256, 256, 1) == native.mode(4096, 128, 64, 1) == native.STRIPES
    # rows off the 64-byte lines: stripes read them as whole lines, faster than tiles in L2 too
    assert native.mode(3, 61, 777, 1) == (native.STRIPES if native._realigns() else native.TILES)
    # ... and on several threads each thread's own columns, in stripes
    assert native.mode(1, 250, 777, 2) == (native.COLUMNS if native._realigns() else native.TILES)
    assert native_read.read_mode(2**18) == native.TILES  # in the last-level cache: one stream
    assert native_read.read_mode(2**24) == native.STRIPES  # 64 MiB: streams side by side


@needs_kernel
def test_without_avx512_rows_in_l2_are_summed_in_stripes(monkeypatch):
    monkeypatch.setattr(native, "_caches", lambda: (2**20, 32 * 2**20))
    monkeypatch.setattr(native, "_lanes", lambda: 8)  # AVX2: 16 registers of 8 floats
    monkeypatch.setattr(native, "_realigns", lambda: False)  # GCC aligns steps with AVX-512 only
    assert native.mode(4, 64, 1024, 1) == native.STRIPES  # whole sentences a thread
    assert native.mode(16, 128, 128, 2) == native.STRIPES
    assert native.mode(1, 256, 1024, 2) == native.STRIPES  # one sentence on two threads ...
    assert native.plan(1, 256, 1024, 2) == (2, 1, 2)  # ... cut by its rows, not its columns
    assert native.mode(3, 61, 777, 2) == native.STRIPES
    assert native.mode(256, 128, 64, 1) == native.STRIPES  # short rows in the last-level cache


@needs_kernel
def test_threads_keep_their_units_where_x_sits_in_their_l2(monkeypatch):
    """Where x sits in the threads' L2, each thread takes the same units every call (OWN_L2), the
    kernel and the read limit alike; beyond it, and on one thread, units go as threads come free."""
    monkeypatch.setattr(native, "_caches", lambda: (2**20, 32 * 2**20))  # 1 MiB L2, 32 MiB L3
    native._plan.cache_clear()
    native._call_shape.cache_clear()

    def own(b, t, h, threads):
        return bool(native._call_shape(b, t, h, threads, *native._limits())[0][6] & native.OWN_L2)

    try:
        assert own(4, 64, 1024, 2) and own(1, 1024, 128, 2)  # 1 MiB, 512 KiB: in their L2
        assert not own(4, 64, 1024, 1)  # one thread: nothing to hand out
        assert not own(8, 512, 1024, 2)  # 16 MiB: past their L2
        read = native_read.call_mode
        assert read(2**18, 2, native.TILES) == native.TILES | native.OWN_L2  # 1 MiB
        assert read(2**18, 1, native.TILES) == native.TILES
        assert read(2**22, 2, native.TILES) == native.TILES  # 16 MiB
    finally:
        native._plan.cache_clear()
        native._call_shape.cache_clear()


@needs_kernel
def test_long_rows_are_read_in_two_stripes_in_the_cache_and_whole_from_memory(monkeypatch):
    """Where four stripes' rows and their running sums would not stay in L1 (five blocks of up to
    2048 numbers over 3/4 of it), x well inside the last-level cache is read as two stripes; from
    memory the rows are read whole (blocks of 16384 columns): ``stripe_bits``, and the plans that
    carry it (stripes, and each thread's columns; never tiles, whose sums are in registers)."""
    monkeypatch.setattr(native, "_caches", lambda: (2**20, 32 * 2**20))  # 1 MiB L2, 32 MiB L3
    monkeypatch.setattr(native, "_l1", lambda: 32 * 2**10)
    mib = 2**18  # numbers
    bits = native.stripe_bits
    assert bits(8 * mib, 2048) == native.TWO_STRIPES  # 8 MiB: 40 KiB of rows and sums
    assert bits(8 * mib, 1280) == native.TWO_STRIPES  # 25 KiB
    assert bits(8 * mib, 1024) == 0  # 20 KiB: four stripes
    assert bits(8 * mib, 4097) == native.TWO_STRIPES  # blocks of 2048
    assert bits(mib // 4, 4097) == native.TWO_STRIPES  # 1 MiB, in L2
    assert bits(16 * mib, 2048) == 0  # half the cache: four streams keep it busier
    assert bits(64 * mib, 100) == native.WHOLE_ROWS  # from memory
    assert bits(64 * mib, 4096) == native.WHOLE_ROWS
    block = native.BLOCK_SHIFT
    assert bits(8 * mib, 2304) == native.TWO_STRIPES | 2304 << block  # three rows: 27 KiB
    assert bits(8 * mib, 2730) == native.TWO_STRIPES | 2736 << block  # 31.99 KiB; whole lines
    assert bits(8 * mib, 2731) == native.TWO_STRIPES  # 32.01 KiB: blocks of 2048
    assert bits(16 * mib, 2304) == 0  # half the cache: four streams, blocks of 2048
    assert bits(8 * mib, 4096) == 1024 << block  # four stripes in even blocks
    assert bits(16 * mib, 3072) == 1024 << block
    assert bits(8 * mib, 3584) == 512 << block
    assert bits(16 * mib, 3584) == 0  # half the cache: blocks of 2048
    assert bits(8 * mib, 2048) == native.TWO_STRIPES  # not longer than a block
    monkeypatch.setattr(native, "_l1", lambda: 48 * 2**10)
    assert bits(8 * mib, 1280) == 0  # 25 KiB of 48
    assert bits(8 * mib, 4096) == native.TWO_STRIPES | 4096 << block  # three rows: 48 KiB
    native._plan.cache_clear()
    native._call_shape.cache_clear()

    def kind(b, t, h, threads):
        return native._call_shape(b, t, h, threads, *native._limits())[0][6]

    try:
        assert kind(8, 128, 2048, 1) == native.STRIPES | native.TWO_STRIPES  # 8 MiB
        assert kind(4, 4096, 4096, 1) == native.STRIPES | native.WHOLE_ROWS  # 256 MiB
        assert kind(4, 64, 1024, 1) == native.TILES  # 1 MiB in L2, sums in registers
        assert kind(3, 61, 777, 1) == native.STRIPES  # rows of 777: four stripes
        if native._realigns():  # columns a thread, in stripes: a thread's 2064 columns
            # the kernel's first chunk 2064 columns: whole, two stripes
            whole = native.TWO_STRIPES | 2064 << native.BLOCK_SHIFT
            assert kind(1, 64, 4097, 2) == native.COLUMNS | whole | native.OWN_L2
            assert kind(1, 250, 777, 2) == native.COLUMNS | native.OWN_L2
    finally:
        native._plan.cache_clear()
        native._call_shape.cache_clear()
