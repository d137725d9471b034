"""The C kernel as a PyTorch operator (attnviz.native_op): fused's fast path. Against float64 in
both ways of summing and on several threads, the same bits as the ctypes call, None wherever the
kernel does not apply, plans handed over by fused, bounded, and outputs reused only where nothing
can read them. Its build and load in fresh processes: tests/test_native_op_build.py."""

import sys
import threading
import weakref

import pytest
import torch
from torch.testing import assert_close

import attnviz
from attnviz import fused, native, native_op, native_read

needs_op = pytest.mark.skipif(
    not native.available() or native_op.find_compiler() is None,
    reason=f"no C kernel or no C++ compiler here: {native.build().detail}",
)

# B, T, H all different; T == H; B = 1; T = 1; H past one tile of 256 columns and not a multiple
SHAPES = [(3, 100, 70), (4, 17, 17), (1, 1000, 33), (5, 1, 9), (2, 45, 2050), (3, 50, 700)]
SHAPES += [(3, 37, 128)]  # short rows (H a multiple of 16, at most a tile): sums in registers
SHAPES += [
    (2, 45, 320)
]  # rows on the lines past a tile: stripes two vectors a step (may ask ahead)


def random_inputs(b, t, h, *, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(b, t, h, generator=g, dtype=torch.float64)  # (B,T,H)
    w = torch.rand(b, t, generator=g, dtype=torch.float64)  # (B,T)
    return x.float(), w.float()


@pytest.fixture(scope="module", params=["builtin", "operator"])
def op(request):
    """What fused calls (the builtin, where Python's headers are here) and the torch operator."""
    built = native_op.build(timeout=600)
    assert built.ok, built.detail  # a compiler is here (needs_op): the build must work
    if request.param == "operator":
        return torch.ops.attnviz.weighted_rows.default
    if not native_op.python_entry(*native_op._torch_dirs()):
        pytest.skip("no Python headers here (python3-dev): fused calls the operator")
    assert type(native_op.loaded).__name__ == "builtin_function_or_method", native_op.loaded
    return native_op.loaded


@pytest.fixture
def planned(monkeypatch):
    """Plans made afresh for the test in the way it forces (and forgotten after it)."""

    def make(x, threads, kind=None, ahead=False):
        if kind is not None:
            monkeypatch.setattr(native, "mode", lambda *shape: kind)
            monkeypatch.setattr(native, "asks_ahead", lambda *shape: ahead)
        native._call_shape.cache_clear()  # its arrays hold the mode
        native_op.clear_plans()
        torch.set_num_threads(threads)
        native_op.learn(x, threads)

    threads = torch.get_num_threads()
    yield make
    torch.set_num_threads(threads)
    native._call_shape.cache_clear()
    native_op.clear_plans()


@needs_op
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("kind", ["stripes", "stripes asking ahead", "tiles", "columns", "pieces"])
def test_the_operator_matches_float64_reference(op, planned, shape, threads, kind):
    x, w = random_inputs(*shape, seed=sum(shape) + threads)
    modes = {"tiles": native.TILES, "columns": native.COLUMNS, "pieces": native.PIECES}
    planned(x, threads, modes.get(kind, native.STRIPES), ahead=kind == "stripes asking ahead")
    got = op(x, w)
    assert got is not None and got.shape == (shape[0], shape[2]) and got.dtype == torch.float32
    assert_close(got, attnviz.reference(x, w).float(), rtol=1e-5, atol=1e-4)


@needs_op
@pytest.mark.parametrize("threads", [2, 3])
@pytest.mark.parametrize("kind", ["stripes", "pieces"])
def test_sentences_cut_into_pieces_sum_right_whatever_room_their_partial_sums_take(
    op, planned, monkeypatch, threads, kind
):
    """The partial sums of sentences cut into pieces go in the calling thread's own room where
    they are few (at most 2**14 numbers, weighted_rows_op.cpp's SCRATCH_NUMEL), in a tensor where
    more: calls of each kind in turn each sum right, and none leaves numbers for the next."""
    monkeypatch.setattr(native, "MIN_NUMEL_PER_THREAD", 1)  # threads, and sentences cut, at once
    monkeypatch.setattr(native, "MAX_UNIT_NUMEL", 64)
    monkeypatch.setattr(native, "MIN_PIECE_ROWS", 2)
    how = {"stripes": native.STRIPES, "pieces": native.PIECES}[kind]
    few, many = (1, 100, 70), (5, 40, 2050)  # partial sums: 140-210 numbers; 20500-30750
    for shape in (few, many, few, many):
        x, w = random_inputs(*shape, seed=sum(shape) + threads)
        planned(x, threads, how)
        split = native._call_shape(*shape, threads, *native._limits())[1]
        assert split > 1 and (shape[0] * split * shape[2] > 2**14) == (shape == many)
        assert_close(op(x, w), attnviz.reference(x, w).float(), rtol=1e-5, atol=1e-4)


@needs_op
@pytest.mark.parametrize("shape", [(2, 64, 1024), (1, 4096, 77), (16, 100, 300)])
def test_the_operator_gives_the_same_bits_as_the_ctypes_call(op, planned, shape):
    x, w = random_inputs(*shape, seed=5)
    planned(x, 2)
    assert torch.equal(op(x, w), native.weighted_rows(x, w, threads=2))


@needs_op
def test_a_strided_w_is_read_as_its_values(op, planned):
    x, w_wide = random_inputs(3, 40, 50, seed=6)
    w = torch.rand(40, 3).t()  # (B,T), not contiguous
    planned(x, 1)
    assert_close(op(x, w), attnviz.reference(x, w).float(), rtol=1e-5, atol=1e-4)


def _cases():
    x, w = random_inputs(3, 40, 50, seed=7)
    return {
        "float64": (x.double(), w.double()),
        "x strided": (x.transpose(1, 2).contiguous().transpose(1, 2), w),
        "w of another shape": (x, w[:, :39]),
        "x not 3-d": (x.reshape(3, 2000), w),
        "w on another device": (x, w.to("meta")),
        "gradient wanted": (x, w.clone().requires_grad_()),
        "no plan for this shape": random_inputs(3, 41, 50, seed=7),
    }


@needs_op
@pytest.mark.parametrize("case", list(_cases()))
def test_the_operator_answers_none_where_the_kernel_does_not_apply(op, planned, case):
    x, w = random_inputs(3, 40, 50, seed=7)
    planned(x, 1)  # a plan for (3, 40, 50) only
    assert op(x, w) is not None
    assert op(*_cases()[case]) is None


@needs_op
def test_without_a_gradient_wanted_a_leaf_that_requires_grad_runs(op, planned):
    x, w = random_inputs(3, 40, 50, seed=8)
    planned(x, 1)
    w.requires_grad_()
    with torch.no_grad():
        got = op(x, w)
    assert got is not None and not got.requires_grad
    assert_close(got, attnviz.reference(x, w.detach()).float(), rtol=1e-5, atol=1e-4)


@needs_op
def test_fused_hands_each_new_shape_to_the_operator_and_then_uses_it(op, planned, monkeypatch):
    x, w = random_inputs(2, 64, 1024, seed=9)
    planned(random_inputs(1, 1, 1, seed=0)[0], 1)  # no plans at all
    native_op.clear_plans()
    assert native_op.plan_count() == 0
    first = fused.weighted_sum_fused(x, w)  # no plan: ctypes, and the plan handed over
    assert native_op.plan_count() == 1
    monkeypatch.setattr(native, "try_weighted_rows", lambda x, w: pytest.fail("ctypes again"))
    second = fused.weighted_sum_fused(x, w)
    assert torch.equal(first, second)
    assert_close(second, attnviz.reference(x, w).float(), rtol=1e-5, atol=1e-4)


@needs_op
def test_plans_are_bounded_whatever_shapes_a_visitor_sends(op, planned):
    planned(random_inputs(1, 1, 1, seed=0)[0], 1)
    for t in range(1, 1200):
        native_op.learn(torch.empty(1, t, 3), 1)
    assert 0 < native_op.plan_count() <= 1024


@needs_op
def test_a_tensor_subclass_is_answered_none_and_fused_still_sums_it(op, planned):
    """A subclass may mean something else by its numbers: the builtin leaves it to the paths that
    honour it (the operator dispatches it as torch does)."""

    class Tagged(torch.Tensor):
        pass

    x, w = random_inputs(3, 40, 50, seed=10)
    planned(x, 1)
    if type(op).__name__ == "builtin_function_or_method":
        assert op(x.as_subclass(Tagged), w) is None and op(x, w.as_subclass(Tagged)) is None
        with pytest.raises(TypeError, match="two tensors"):
            op(x)
    got = fused.weighted_sum_fused(x.as_subclass(Tagged), w)
    assert_close(
        got.as_subclass(torch.Tensor), attnviz.reference(x, w).float(), rtol=1e-5, atol=1e-4
    )


@needs_op
def test_the_floor_reads_through_the_builtin_and_refuses_what_the_reader_refuses(monkeypatch):
    """The benchmark's floor (``native_op.reader``) calls the read loop as leanly as fused calls
    the kernel, and is as strict as ``native_read.reader`` about what it reads."""
    assert native_op.build(timeout=600).ok
    if native_op.read_floats is None:
        pytest.skip("no Python headers here (python3-dev): the floor reads through ctypes")
    calls, real = [], native_op.read_floats
    monkeypatch.setattr(native_op, "read_floats", lambda *a: calls.append(a[1:]) or real(*a))
    x, _ = random_inputs(2, 30, 70, seed=11)
    y, _ = random_inputs(2, 30, 70, seed=12)
    read = native_op.reader(x, threads=2)
    assert read(y) == pytest.approx(float(y.double().sum()), rel=1e-5, abs=1e-4)
    assert calls == [(4200, *native_read.read_plan(4200, 2)[::-1], native_read.read_mode(4200))]
    wrong = [torch.zeros(2, 30, 71), x.double(), torch.zeros(2, 70, 30).transpose(1, 2)]
    for y in wrong:
        with pytest.raises(attnviz.AttnvizError, match=r"reads \(2, 30, 70\) float32"):
            read(y)


@needs_op
def test_a_forgotten_or_changed_plan_is_not_taken_from_the_last_call(op, planned):
    """Each thread remembers its last plan; clearing or changing the plans must still count."""
    x, w = random_inputs(2, 64, 1024, seed=13)
    planned(x, 1, native.STRIPES)
    stripes = op(x, w)
    assert stripes is not None and torch.equal(op(x, w), stripes)  # the remembered plan
    native_op.clear_plans()
    assert op(x, w) is None
    planned(x, 1, native.TILES)
    tiles = op(x, w)
    assert tiles is not None and not torch.equal(tiles, stripes)  # summed in another order
    assert torch.equal(tiles, native.try_weighted_rows(x, w))


@needs_op
def test_an_output_s_memory_comes_back_only_when_nothing_can_read_it(op, planned):
    """Outputs are made in kept blocks: a dropped output's block is the next output's, but never
    while a view, a storage or a NumPy array of it is alive."""
    x, w = random_inputs(3, 50, 700, seed=14)
    planned(x, 1)
    first = op(x, w)
    where = first.data_ptr()
    del first
    assert op(x, w).data_ptr() == where  # dropped (the temporary too): the same block again
    expected = attnviz.reference(x, w).float()
    keeps = {  # what is kept of an output, and the (3, 700) or (2, 700) numbers it reads
        "a view": (lambda t: t[1:], lambda held: held),
        "its storage": (
            lambda t: t.untyped_storage(),
            lambda s: torch.empty(0).set_(s, 0, (3, 700)),
        ),
        "a NumPy array": (lambda t: t.numpy(), torch.from_numpy),
    }
    for keep, read in keeps.values():
        out = op(x, w)
        held, where = keep(out), out.data_ptr()
        del out
        y, v = random_inputs(3, 50, 700, seed=15)
        assert op(y, v).data_ptr() != where  # and, alive meanwhile, the numbers stay x's
        numbers = read(held)
        assert_close(numbers, expected[3 - len(numbers) :], rtol=1e-5, atol=1e-4)
    grown = op(x, w)
    grown.resize_(4, 700)  # a kept block grows as any tensor's storage does
    assert_close(grown[:3], expected, rtol=1e-5, atol=1e-4)


@needs_op
def test_kept_blocks_are_bounded_in_number_and_size(op, planned):
    outputs = []
    for h in range(16, 16 * 40, 16):  # 39 sizes, all alive at once, then dropped
        x, w = random_inputs(1, 4, h, seed=h)
        planned(x, 1)
        outputs.append(op(x, w))
    big_x, big_w = random_inputs(2, 2, 40000, seed=16)  # 312 KiB out: never kept
    planned(big_x, 1)
    big = op(big_x, big_w)
    assert sys.getrefcount(big) == 2  # this name's and the call's: the builtin keeps none
    outputs.append(big)
    del big
    while outputs:  # dropped in the order they were made, the big one last
        outputs.pop(0)
    # the builtin keeps its newest outputs whole for their next call (reused_outputs), their
    # blocks with them; the 8 dropped before them are kept as blocks
    newest = 39 - _reused(op)
    count, size = native_op.kept_blocks()
    assert count == 8 and size == sum(4 * 16 * k for k in range(newest - 7, newest + 1))


def _reused(op) -> int:
    """How many outputs ``op`` keeps whole for their next call: the builtin's, torch.ops none."""
    return native_op.reused_outputs if op is native_op.loaded else 0


@needs_op
def test_a_dropped_output_is_the_next_output_of_its_size_with_the_new_numbers(op, planned):
    """A loop that drops each result gets back the tensor it dropped (no tensor made or freed);
    also where x is summed without the GIL (T = 5000: past KEEP_GIL_NUMEL)."""
    if not _reused(op):
        pytest.skip("torch.ops makes each output afresh")
    for t in (50, 5000):
        x, w = random_inputs(3, t, 70, seed=21)
        planned(x, 1)
        first = op(x, w)
        made, where = id(first), first.data_ptr()
        first.add_(0)  # an in-place write: the version counter goes up, a new tensor's is 0
        version = first._version  # 1, or more where first was itself kept (the T before)
        del first
        y, v = random_inputs(3, t, 70, seed=22)
        again = op(y, v)
        assert (id(again), again.data_ptr(), again._version) == (made, where, version) and version
        assert_close(again, attnviz.reference(y, v).float(), rtol=1e-5, atol=1e-4)
        assert again.shape == (3, 70) and again.stride() == (70, 1) and again.is_contiguous()
        del again


@needs_op
@pytest.mark.parametrize(
    "holder",
    ["a name", "a view", "its storage", "a NumPy array", "a DLPack capsule", "a weak reference"],
)
def test_an_output_anything_can_read_is_never_the_next_output(op, planned, holder):
    if holder == "a weak reference" and not _reused(op):
        pytest.skip("a dropped output lives on only where it is kept for reuse")
    x, w = random_inputs(3, 50, 70, seed=23)
    planned(x, 1)
    expected = attnviz.reference(x, w).float()
    keep, read = {  # what is kept of an output, and its (3, 70) numbers through it
        "a name": (lambda t: t, lambda held: held),
        "a view": (lambda t: t[:], lambda held: held),
        "its storage": (
            lambda t: t.untyped_storage(),
            lambda s: torch.empty(0).set_(s, 0, (3, 70)),
        ),
        "a NumPy array": (lambda t: t.numpy(), torch.from_numpy),
        "a DLPack capsule": (torch.utils.dlpack.to_dlpack, torch.utils.dlpack.from_dlpack),
        "a weak reference": (weakref.ref, lambda ref: ref()),
    }[holder]
    for _ in range(_reused(op) + 2):  # more than the builtin keeps
        out = op(x, w)
        held = keep(out)
        del out
        y, v = random_inputs(3, 50, 70, seed=24)
        assert_close(op(y, v), attnviz.reference(y, v).float(), rtol=1e-5, atol=1e-4)
        assert_close(read(held), expected, rtol=1e-5, atol=1e-4)  # untouched by that call


@needs_op
@pytest.mark.parametrize(
    "change",
    [
        "an attribute",
        "requires_grad",
        "a grad",
        "resized",
        "restrided",
        "broadcast",
        "reset",
        "shared",
        "a file's memory",
    ],
)
def test_an_output_changed_after_it_was_made_is_never_the_next_output(
    op, planned, change, tmp_path
):
    """The next output is always as a new one is, whatever was done to one dropped before it."""
    x, w = random_inputs(3, 50, 70, seed=25)
    planned(x, 1)
    changes = {
        "an attribute": lambda t: setattr(t, "note", "mine"),
        "requires_grad": lambda t: t.requires_grad_(),
        "a grad": lambda t: setattr(t, "grad", torch.ones(3, 70)),
        "resized": lambda t: t.resize_(2, 70),
        "restrided": lambda t: t.as_strided_((3, 70), (1, 3)),
        "broadcast": lambda t: t.as_strided_((3, 70), (70, 0)),
        "reset": lambda t: t.set_(torch.zeros(3, 70)),  # another's memory
        "shared": lambda t: t.share_memory_(),  # other processes may read it
        "a file's memory": lambda t: t.set_(torch.from_file(str(file), True, 210).view(3, 70)),
    }
    file = tmp_path / "mapped"
    for _ in range(_reused(op) + 2):
        out = op(x, w)
        changes[change](out)
        del out
        got = op(x, w)
        assert not hasattr(got, "note") and not got.requires_grad and got.grad is None
        assert got.shape == (3, 70) and got.stride() == (70, 1) and not got.is_shared()
        assert_close(got, attnviz.reference(x, w).float(), rtol=1e-5, atol=1e-4)
    if change == "a file's memory":
        assert file.read_bytes() == bytes(4 * 210)  # never written into


@needs_op
@pytest.mark.parametrize("numel", ["holding the GIL", "letting go of it"])
def test_threads_calling_at_once_each_get_their_own_numbers(op, planned, numel):
    """Python threads that call at once, keeping some results and dropping others: an output is
    never handed to two callers, also while a large x is read without the GIL."""
    shape = (2, 40, 70) if numel == "holding the GIL" else (2, 1024, 520)  # 2**20 numbers and up
    inputs = [random_inputs(*shape, seed=30 + i) for i in range(4)]
    expected = [attnviz.reference(x, w).float() for x, w in inputs]
    planned(inputs[0][0], 1)
    wrong, kept = [], []

    def caller(i: int) -> None:
        x, w = inputs[i]
        for call in range(40):
            out = op(x, w)
            if not torch.allclose(out, expected[i], rtol=1e-5, atol=1e-4):
                wrong.append((i, call))
            if call % 3 == 0:
                kept.append((i, out))  # read again once every thread is done

    threads = [threading.Thread(target=caller, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert wrong == []
    for i, out in kept:
        assert_close(out, expected[i], rtol=1e-5, atol=1e-4)


@needs_op
def test_an_output_made_in_inference_mode_is_taken_again_only_there(op, planned):
    x, w = random_inputs(3, 50, 70, seed=26)
    planned(x, 1)
    with torch.inference_mode():
        assert op(x, w).is_inference()
    assert not op(x, w).is_inference()
    with torch.inference_mode():
        assert op(x, w).is_inference()


@needs_op
def test_a_wrong_plan_is_refused_with_a_message(op):
    with pytest.raises(RuntimeError, match="7 entries"):
        torch.ops.attnviz.set_plan(1, [1, 2, 3], 1)
