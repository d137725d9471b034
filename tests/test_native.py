"""The C kernel behind "fused" on the CPU (attnviz.native): against float64, in every way it sums
rows, and its edges (empty axes, NaN and inf, what lies beside x, bad arguments). Its work plan:
tests/test_native_plan.py; its read limit: tests/test_native_read.py; its build, cache and
fallback: tests/test_native_build.py."""

import re
import threading

import pytest
import torch
from torch.testing import assert_close

import attnviz
from attnviz import AttnvizError, fused, native, native_build, native_op

needs_kernel = pytest.mark.skipif(
    not native.available(), reason=f"no C kernel here: {native.build().detail}"
)

# B, T, H all different; T == H; B = 1; T = 1; T not a multiple of 4 (the kernel's row step);
# H not a multiple of any vector width, and H above one BLOCK_H (2048) of running sums
SHAPES = [
    (2, 3, 5),
    (3, 100, 70),
    (4, 17, 17),
    (1, 1000, 33),
    (5, 1, 9),
    (7, 61, 61),
    (2, 45, 2050),
    (1, 4099, 3),
    (3, 50, 700),  # two tiles of 256 columns and 188 more
    (1, 300, 256),  # exactly one tile
    (3, 37, 128),  # short rows, their sums in registers: 8 vectors, T % 4 == 1
    (2, 3, 48),  # short rows, fewer than four: no stripe at all, the rows one by one
    (2, 45, 320),  # rows on the lines past a tile: stripes two vectors a step
    (1, 23, 2064),  # ... a block of 2048 columns two vectors a step, the 16 left one a step
    (1, 9, 16400),  # whole rows (WHOLE_ROWS): a block of 16384 columns, and 16 more
    (2, 6, 16401),  # ... off the lines
]


def random_inputs(b, t, h, *, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(b, t, h, generator=g, dtype=torch.float64)  # (B,T,H)
    w = torch.rand(b, t, generator=g, dtype=torch.float64)  # (B,T)
    return x.float(), w.float()


def expected(x, w):
    return attnviz.reference(x, w).float()  # (B,H) from float64


@pytest.fixture(
    params=[
        "stripes",
        "stripes asking ahead",
        "two stripes",
        "two stripes asking ahead",
        "stripes of whole rows",
        "stripes in blocks of 512",
        "two stripes of whole rows in the cache",
        "tiles",
        "columns",
        "columns in two stripes",
        "pieces",
    ]
)
def summed_in(request, monkeypatch):
    """Each way the kernel sums rows (``native.mode`` picks one by where x sits, the first call
    of a shape from beyond L2 whether stripes ask for their lines ahead, and ``stripe_bits`` how
    many stripes, in blocks of how many columns), forced."""
    kinds = {"tiles": native.TILES, "pieces": native.PIECES}
    kind = native.COLUMNS if request.param.startswith("columns") else native.STRIPES
    kind = kinds.get(request.param, kind)
    monkeypatch.setattr(native, "mode", lambda *shape: kind)
    ahead = request.param.endswith("asking ahead")
    monkeypatch.setattr(native, "asks_ahead", lambda *shape: ahead)
    bits = native.TWO_STRIPES if "two stripes" in request.param else 0
    bits |= native.WHOLE_ROWS if request.param == "stripes of whole rows" else 0
    bits |= 512 << native.BLOCK_SHIFT if "blocks of 512" in request.param else 0
    whole = request.param.endswith("in the cache")  # a block of the row's (or chunk's) columns

    def stripe_bits(numel, cols):
        return bits | (min(cols, 16384) << native.BLOCK_SHIFT if whole else 0)

    monkeypatch.setattr(native, "stripe_bits", stripe_bits)
    native._call_shape.cache_clear()  # its arrays hold the mode
    yield kind
    native._call_shape.cache_clear()


@pytest.fixture(params=["as they come free", "each thread its own"])
def units_go(request, monkeypatch):
    """Each way the threads take units (``native._call_shape`` sets OWN_L2 where x sits in their
    L2: each thread the same units every call), forced: the test sizes all sit in L2."""
    own = request.param == "each thread its own"
    monkeypatch.setattr(native, "_in_l2", lambda numel, threads: own)
    native._call_shape.cache_clear()
    yield own
    native._call_shape.cache_clear()


@needs_kernel
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_kernel_matches_float64_reference(shape, threads, fine_grained, summed_in, units_go):
    call, _ = native._call_shape(*shape, threads, *native._limits())
    assert bool(call[6] & native.OWN_L2) == (units_go and call[5] > 1)
    x, w = random_inputs(*shape, seed=sum(shape) + threads)
    got = native.weighted_rows(x, w, threads=threads)
    assert got.shape == (shape[0], shape[2]) and got.dtype == torch.float32
    assert_close(got, expected(x, w), rtol=1e-5, atol=1e-4)


@needs_kernel
def test_default_plan_at_benchmark_size_matches_reference():
    x, w = random_inputs(8, 512, 1024, seed=11)  # big enough for every thread, default plan
    assert_close(native.weighted_rows(x, w), expected(x, w), rtol=1e-5, atol=1e-4)


@needs_kernel
def test_results_are_the_same_bits_every_run(fine_grained):
    # dynamic scheduling changes which thread sums a unit, never the order of the additions
    x, w = random_inputs(3, 200, 50, seed=4)
    first = native.weighted_rows(x, w, threads=2)
    for _ in range(20):
        assert torch.equal(native.weighted_rows(x, w, threads=2), first)


@needs_kernel
@pytest.mark.parametrize(("b", "t", "h"), [(3, 0, 4), (0, 5, 4), (3, 5, 0)])
def test_empty_axes_give_the_reference_result(b, t, h):
    x, w = torch.zeros(b, t, h), torch.zeros(b, t)
    got = native.weighted_rows(x, w)
    assert got.shape == (b, h)
    assert torch.equal(got, torch.zeros(b, h))


@needs_kernel
@pytest.mark.parametrize("h", [777, 9, 2050, 100])  # rows off the 64-byte lines: whole lines
def test_a_nan_next_to_a_row_stays_out_of_its_sums(h, summed_in):
    """Where H is not a multiple of 16 the kernel reads each row's lines whole, numbers of the
    next row included: a NaN or inf there must reach only its own column."""
    x, w = random_inputs(2, 40, h, seed=h)
    x[:, :, 0] = float("nan")  # first of every row: just past the previous row's last number
    x[:, :, 1] = float("inf")
    x[:, :, 2:] = x[:, :, 2:].nan_to_num()
    got = native.weighted_rows(x, w, threads=2)
    assert got[:, 0].isnan().all() and (got[:, 1] == float("inf")).all()
    assert_close(got[:, 2:], expected(x[:, :, 2:], w), rtol=1e-5, atol=1e-4)


@needs_kernel
@pytest.mark.parametrize(
    "h",
    [777, 770, 772, 774]  # a row's offset on its line repeats every 16, 8, 4, 2 rows
    + [18, 29, 61, 100, 226, 241, 242, 17],  # short rows: their sums in registers (18-241)
)
@pytest.mark.parametrize("t", [3, 61, 67, 301])  # stripes of unequal length: steps of 1 to 4 rows
def test_rows_off_the_lines_are_summed_in_every_grouping(h, t):
    """Rows off the 64-byte lines are added in steps of rows that share their offset, one from
    each of four stripes a multiple of that period long, the last stripes shorter or empty: steps
    of four rows, then three, two, one (T = 3 has one stripe, T = 67 at H = 777 two full and one of
    3 rows), each on one thread; short rows with their running sums in registers, moved from one
    step's offset to the next (up or down), and the rows just outside that range."""
    x, w = random_inputs(2, t, h, seed=h + t)
    assert_close(native.weighted_rows(x, w, threads=1), expected(x, w), rtol=1e-5, atol=1e-4)


@needs_kernel
@pytest.mark.parametrize("h", [5, 17, 18, 45, 61, 100, 241])  # short rows off the lines
# T * H odd: each sentence at its own place on a line; short sentences by loads that straddle
# lines (16 rows or fewer, or no step of four rows: T = 32 at H = 61), longer ones by permutes
@pytest.mark.parametrize("t", [3, 8, 16, 32, 61, 64])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("kind", [native.STRIPES, native.COLUMNS], ids=["stripes", "columns"])
def test_short_rows_off_the_lines_give_each_sentence_the_bits_it_has_alone(
    h, t, threads, kind, monkeypatch
):
    """Short rows off the lines are summed a unit's sentences at a time (short_realigned_of, one
    call for them all): each sentence's sums are those of the same rows summed alone, to the bit
    (the same place on the lines, the same order of adds), and the float64 reference's. Ten
    sentences: on two threads none is cut into pieces, which would add its rows in another order."""
    monkeypatch.setattr(native, "mode", lambda *shape: kind)
    native._call_shape.cache_clear()  # its arrays hold the mode
    assert native.plan(10, t, h, threads)[2] == 1
    x, w = random_inputs(10, t, h, seed=h * t + threads)
    got = native.weighted_rows(x, w, threads=threads)
    alone = [native.weighted_rows(x[s : s + 1], w[s : s + 1], threads=1) for s in range(10)]
    native._call_shape.cache_clear()
    assert torch.equal(got, torch.cat(alone))
    assert_close(got, expected(x, w), rtol=1e-5, atol=1e-4)


@needs_kernel
@pytest.mark.parametrize("offset", [1, 5])
@pytest.mark.parametrize("h", [5, 16, 48, 61])  # a whole number of vectors, or not
@pytest.mark.parametrize("t", [5, 16, 64])  # straddled (5, 16: four stripes, and one left) or not
def test_short_sentences_of_a_view_off_the_lines_are_summed_right(offset, h, t):
    x, w = random_inputs(6, t, h, seed=offset * h + t)
    flat = torch.empty(offset + x.numel())
    flat[offset:] = x.reshape(-1)
    view = flat[offset:].view(6, t, h)  # every row off the 64-byte lines, H = 48 too
    assert_close(native.weighted_rows(view, w, threads=1), expected(x, w), rtol=1e-5, atol=1e-4)


@needs_kernel
@pytest.mark.parametrize("offset", [1, 5, 16])
@pytest.mark.parametrize("h", [1024, 64])  # long rows; short ones, their sums in registers
def test_a_view_that_starts_off_a_line_is_summed_right(offset, h, summed_in):
    x, w = random_inputs(3, 50, h, seed=offset)
    flat = torch.empty(offset + x.numel())
    flat[offset:] = x.reshape(-1)
    view = flat[offset:].view(3, 50, h)  # contiguous, its rows off the 64-byte lines
    assert view.is_contiguous() and view.data_ptr() % 64 == (4 * offset) % 64
    assert_close(native.weighted_rows(view, w, threads=2), expected(x, w), rtol=1e-5, atol=1e-4)


@needs_kernel
@pytest.mark.parametrize("offset", [0, 3])  # x on a line's start, or 3 numbers into it
@pytest.mark.parametrize(
    "shape",
    [(2, 3, 5), (1, 3, 1), (4, 30, 17), (3, 7, 61)]  # small: copied away from what lies beside
    + [(3, 61, 777)],  # larger than the copy: summed where it is
)
def test_subnormal_numbers_beside_x_change_nothing(shape, offset):
    """x's first and last lines are read whole; what lies on them beside x (here subnormal
    numbers, as a malloc header's small integers read) never reaches a sum, whether the kernel
    sums x where it is or, where that is small, copies it first: the same sums to the bit as x
    between zeros, and the float64 reference's."""
    x, w = random_inputs(*shape, seed=offset + shape[2])
    n = x.numel()
    around = []
    for fill in (1e-40, 0.0):  # subnormal (0x11d7d), then zero
        flat = torch.full((offset + n + 32,), fill)
        flat[offset : offset + n] = x.reshape(-1)
        around.append(flat[offset : offset + n].view(shape))
    beside_subnormals, beside_zeros = around
    assert beside_subnormals[(0,) * 3].item() == x[(0,) * 3].item()  # the view holds x
    assert flat.data_ptr() % 64 == 0 and (offset + n) % 16 != 0  # x ends inside a line
    got = native.weighted_rows(beside_subnormals, w, threads=1)
    assert torch.equal(got, native.weighted_rows(beside_zeros, w, threads=1))
    assert_close(got, expected(x, w), rtol=1e-5, atol=1e-4)


@needs_kernel
def test_nan_and_inf_propagate_like_the_one_liner():
    x, w = random_inputs(2, 64, 600, seed=2)
    x[0, 5, 7] = float("nan")
    x[1, 9, 3] = float("inf")
    w[1, 9] = 0.0  # 0 * inf is nan, as in (x * w[..., None]).sum(1)
    x[1, 2, 11] = float("-inf")
    got = native.weighted_rows(x, w, threads=2)
    one_liner = (x * w[..., None]).sum(dim=1)  # (B,H)
    assert_close(got, one_liner, rtol=1e-5, atol=1e-4, equal_nan=True)
    assert got[0, 7].isnan() and got[1, 3].isnan() and got[1, 11] == float("-inf")


@needs_kernel
@pytest.mark.parametrize(
    "bad",
    [
        lambda x, w: (x.double(), w.double()),  # float64
        lambda x, w: (x.transpose(1, 2).contiguous().transpose(1, 2), w),  # strided x
        lambda x, w: (x, w[:, :-1]),  # w shorter than T
        lambda x, w: (x, w.double()),  # mixed dtypes
        lambda x, w: (x[0], w[0]),  # no sentence axis
    ],
    ids=["float64", "strided", "short w", "mixed dtypes", "2-d"],
)
def test_kernel_refuses_what_it_cannot_read_safely(bad):
    x, w = random_inputs(2, 6, 8, seed=0)
    with pytest.raises(AttnvizError, match="weighted_rows needs float32"):
        native.weighted_rows(*bad(x, w))


@pytest.mark.parametrize(
    ("change", "usable"),
    [
        (lambda x, w: (x, w), True),
        (lambda x, w: (x.double(), w.double()), False),
        (lambda x, w: (x[:, :, ::2], w), False),
        (lambda x, w: (x.requires_grad_(), w), False),
    ],
    ids=["float32", "float64", "strided", "needs grad"],
)
def test_usable_only_where_the_kernel_applies(change, usable):
    x, w = change(*random_inputs(2, 6, 8, seed=0))
    assert native.usable(x, w) == (usable and native.available())


@needs_kernel
def test_concurrent_callers_get_their_own_results():
    inputs = [random_inputs(4, 300, 257, seed=s) for s in range(6)]
    results = [None] * len(inputs)

    def work(i):
        for _ in range(5):
            results[i] = native.weighted_rows(*inputs[i])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(inputs))]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for (x, w), got in zip(inputs, results, strict=True):
        assert_close(got, expected(x, w), rtol=1e-5, atol=1e-4)


@needs_kernel
def test_fused_uses_the_kernel_at_every_size(monkeypatch):
    # the operator, once its background build is done, takes fused's calls from ctypes (counted
    # here): wait for that build, then leave the operator out, so that no call changes ways midway
    native_op.build()
    monkeypatch.setattr(native_op, "loaded", None)
    calls = []
    real = native._run
    monkeypatch.setattr(
        native, "_run", lambda lib, x, w, *shape: calls.append(x.shape) or real(lib, x, w, *shape)
    )
    x, w = random_inputs(2, 256, 512, seed=1)  # CPU_ROWS_MIN_NUMEL numbers
    attnviz.weighted_sum(x, w, method="fused")
    attnviz.weighted_sum(x.double(), w.double(), method="fused")  # float64: embedding bag
    attnviz.weighted_sum(x[:1, :8, :8], w[:1, :8], method="fused")  # strided: bmm
    tiny = x[:2, :3, :5].contiguous(), w[:2, :3].contiguous()  # 30 numbers
    attnviz.weighted_sum(*tiny, method="fused")
    attnviz.weighted_sum(x[:, :16].contiguous(), w[:, :16], method="fused")
    assert calls == [(2, 256, 512), (2, 3, 5), (2, 16, 512)]
    assert fused.fused_path(x, w) == fused.fused_path(*tiny) == "C row-sum kernel"
    assert fused.choose_method("cpu", (2, 3, 5), torch.float32) == "fused"
    assert fused.fused_path(x.double(), w.double()) == "embedding-bag row sum"


@needs_kernel
@pytest.mark.parametrize("default", [torch.float64, torch.float16])
def test_the_kernels_output_is_float32_whatever_the_default_dtype(default):
    """The output is allocated without a dtype only where the default is float32 (quicker)."""
    x, w = random_inputs(3, 40, 70, seed=4)
    before = torch.get_default_dtype()
    torch.set_default_dtype(default)
    try:
        out = native.try_weighted_rows(x, w)
    finally:
        torch.set_default_dtype(before)
    assert out.dtype == torch.float32
    assert_close(out, expected(x, w), rtol=1e-5, atol=1e-4)


def test_the_plans_mode_bits_and_block_are_the_kernels():
    """native.py mirrors numbers the C source defines (the mode's bits, the columns of a block of
    running sums): a change on one side alone would plan for a kernel that is not there."""
    csrc = native_build.SOURCE.parent
    sources = ("weighted_rows.c", "threads.h", "short_rows.h", "long_sentences.h", "stripes.h")
    text = "".join((csrc / n).read_text(encoding="utf-8") for n in sources)
    defined = {k: int(v) for k, v in re.findall(r"^#define (\w+) (\d+)\b", text, re.MULTILINE)}
    bit_names = ("PREFETCH", "OWN_L2", "TWO_STRIPES", "WHOLE_ROWS", "SENTENCE_STRIPES")
    for name in (
        *bit_names,
        "BLOCK_H",
        "BLOCK_SHIFT",
        "STRIPED_NUMEL",
        "FEW_ROWS",
        "FEW_ROWS_COLUMNS",
        "FEW_ROWS_WAYS",
        "LONG_STRIPED_H",
        "LONG_WIDE_H",
        "LONG_WIDE_ROWS",
        "BLOCK_ROWS",
        "BLOCK_MAX_H",
    ):
        assert defined[name] == getattr(native, name), name
    bits = [getattr(native, name) for name in bit_names]
    assert all(b & 3 == 0 for b in bits) and len({*bits}) == len(bits)  # apart from the kind
    assert all(b & (b - 1) == 0 for b in bits)  # one bit each
    assert max(bits) < 1 << native.BLOCK_SHIFT  # below the block
    # the kernel's own bit (whole sentences' sums from DRAM past the caches): none of the plan's
    stream = defined["STREAM_OUT"]
    assert stream & (stream - 1) == 0 and stream & (sum(bits) | 3) == 0
    assert stream < 1 << native.BLOCK_SHIFT
    assert 0 < native.EVEN_BLOCK <= defined["DRAM_BLOCK_H"]


@needs_kernel
# the rows' places on a page 2, 4, 2 and 4 KiB apart, and 64 bytes apart (the sums kept at out)
@pytest.mark.parametrize("h", [512, 1024, 2560, 4096, 4112, 16384])  # 16384: a block of 64 KiB
@pytest.mark.parametrize("how", [0, native.TWO_STRIPES, native.PREFETCH, native.WHOLE_ROWS])
@pytest.mark.parametrize("threads", [1, 2])
def test_sums_are_right_wherever_the_output_lies_on_its_page(h, how, threads):
    """Where the output lies just past the rows' place on a 4 KiB page, the stripes keep their
    running sums in room of their own and copy them out after each block (``running_sums`` in
    stripes.h; no other place changes the sums): with x at a fixed place on its page and
    out moved across the page, every place gives the float64 sums."""
    import ctypes

    lib = native_build._build()[1]
    b, t, page = 3, 41, 1024  # numbers in a page
    xs, w = random_inputs(b, t, h, seed=h + how)
    ref = expected(xs, w)
    room = torch.empty(b * t * h + 2 * page)
    x = room[(-room.data_ptr() // 4) % page + 32 :][: b * t * h]  # 128 bytes into a page
    x.copy_(xs.reshape(-1))
    outs = torch.empty(b * h + 2 * page)
    first = (-outs.data_ptr() // 4) % page + 32  # out at x's place on its page
    shape = (ctypes.c_long * 7)(b, t, h, 1, 1, threads, native.STRIPES | how)
    for past in (0, 16, 32, 64, 96, 160, 256, 512, 1000):  # numbers past the rows' place
        out = outs[first + past :][: b * h]
        out.fill_(float("nan"))
        lib.weighted_rows_f32(x.data_ptr(), w.data_ptr(), out.data_ptr(), out.data_ptr(), shape)
        assert_close(out.view(b, h), ref, rtol=1e-5, atol=1e-4, msg=f"out {4 * past} B past x")
