"""The "fused" and "auto" methods: the CPU row-sum path, the Triton kernel (in Triton's
interpreter on CPU), the split-T configuration and the automatic choice, all against float64."""

import json
import os
import subprocess
import sys
import textwrap
import threading

import pytest
import torch
from torch.testing import assert_close

import attnviz
from attnviz import fused, weighted_sum

TOL = {
    torch.float64: dict(rtol=1e-12, atol=1e-12),
    torch.float32: dict(rtol=1e-5, atol=1e-5),
    torch.bfloat16: dict(rtol=2e-2, atol=5e-2),
    torch.float16: dict(rtol=5e-3, atol=1e-2),
}

# B, T, H all different, T and H not multiples of any block size, B = 1, T == H, and sizes big
# enough (>= CPU_ROWS_MIN_NUMEL numbers) that "fused" takes the row-sum path on the CPU
SHAPES = [
    (2, 3, 5),
    (1, 37, 300),
    (3, 100, 70),
    (4, 17, 17),
    (1, 1000, 33),
    (5, 129, 97),
    (7, 61, 61),
    (3, 300, 301),
    (1, 1000, 263),
    (2, 1024, 131),
]


def random_inputs(b, t, h, *, seed, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(b, t, h, generator=g, dtype=torch.float64)  # (B,T,H)
    w = torch.rand(b, t, generator=g, dtype=torch.float64)  # (B,T)
    return x.to(dtype), w.to(dtype)


def oracle(x, w):
    return attnviz.reference(x, w)  # (B,H) float64


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("method", ["fused", "auto"])
def test_method_matches_float64_reference(method, shape):
    x, w = random_inputs(*shape, seed=sum(shape))
    got = weighted_sum(x, w, method=method)
    assert got.shape == (shape[0], shape[2]) and got.dtype == torch.float32
    assert_close(got, oracle(x, w).float(), **TOL[torch.float32])


@pytest.mark.parametrize("dtype", list(TOL))
@pytest.mark.parametrize("shape", [(1, 37, 300), (3, 100, 70), (6, 9, 9)])
def test_row_sum_path_matches_reference_in_every_dtype(shape, dtype):
    x, w = random_inputs(*shape, seed=3, dtype=dtype)
    got = fused.weighted_sum_rows(x, w)
    assert got.dtype == dtype
    assert_close(got, oracle(x, w).to(dtype), **TOL[dtype])


def test_fused_takes_the_row_sum_path_above_the_threshold(monkeypatch):
    monkeypatch.setattr(fused.native, "try_weighted_rows", lambda x, w: None)  # as without cc
    fused.native_op.build()  # done first: a build ending mid-test would be undone at teardown
    monkeypatch.setattr(fused.native_op, "loaded", None)
    calls = []
    monkeypatch.setattr(fused, "weighted_sum_rows", lambda x, w: calls.append(x.shape) or x[:, 0])
    x, w = random_inputs(2, 256, 512, seed=1)  # CPU_ROWS_MIN_NUMEL numbers
    fused.weighted_sum_fused(x, w)
    fused.weighted_sum_fused(x[:, :, :64], w)  # strided: bmm instead
    fused.weighted_sum_fused(x[:1, :8, :8].contiguous(), w[:1, :8])  # tiny: bmm instead
    assert calls == [(2, 256, 512)]


@pytest.mark.parametrize(
    ("b", "t", "threads"), [(1, 10, 2), (3, 7, 2), (4, 5, 2), (1, 3, 8), (2, 1000, 16)]
)
def test_bags_cover_every_word_once_and_stay_inside_a_sentence(b, t, threads):
    rows, starts = fused._bags(b, t, threads)
    assert torch.equal(rows, torch.arange(b * t))
    s = starts.numel() // b
    assert starts.numel() == b * s and s == max(1, s)
    per_sentence = starts.view(b, s) - (torch.arange(b) * t)[:, None]  # (B,S) offsets in sentence
    assert torch.all(per_sentence[:, 0] == 0)
    assert torch.all(per_sentence < t) and torch.all(per_sentence.diff(dim=1) > 0)
    assert b * s >= min(threads, b * t)  # every thread gets work when there are words


def test_row_sum_splits_a_single_long_sentence_correctly():
    x, w = random_inputs(1, 5003, 7, seed=5)
    assert fused.cpu_chunks(1, 5003, torch.get_num_threads()) >= 2
    assert_close(fused.weighted_sum_rows(x, w), oracle(x, w).float(), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize(
    ("device", "shape", "expected"),
    [
        ("cuda", (8, 16384, 1024), "bmm"),  # cuBLAS, measured ahead of our Triton kernel
        ("cuda:0", (2, 3, 5), "bmm"),
        ("cpu", (48, 512, 1024), "fused"),
        ("mps", (48, 512, 1024), "bmm"),
    ],
)
def test_choose_method_picks_a_known_method(device, shape, expected):
    name = fused.choose_method(device, shape, torch.float32)
    assert name == expected and name in attnviz.METHODS and name != "auto"


@pytest.mark.parametrize("shape", [(2, 3, 5), (4, 32, 64), (8, 64, 128), (1, 7, 7)])
def test_auto_takes_the_c_kernel_at_every_size_where_it_builds(shape):
    """Where the kernel is built, "auto" is "fused" for float32 on the CPU, tiny inputs included
    (its call has the least fixed cost), and runs it: the result within float32 of float64."""
    if not fused.native.available():
        pytest.skip(f"no C kernel here: {fused.native.build().detail}")
    assert fused.choose_method("cpu", shape, torch.float32) == "fused"
    x, w = random_inputs(*shape, seed=4)
    assert fused.fused_path(x, w) == "C row-sum kernel"
    assert_close(fused.weighted_sum_auto(x, w), oracle(x, w).float(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    ("loaded", "done", "detail", "says"),
    [
        (
            True,
            True,
            "",
            "one pass over x, no (B, T, H) temporary, and a call with less fixed cost",
        ),
        (
            False,
            False,
            "",
            "called through ctypes while the operator that calls it with less fixed",
        ),
        (False, True, "not built yet: this process only loads it", "until the server has built"),
        (
            False,
            True,
            "turned off by ATTNVIZ_NATIVE_OP=0",
            "operator that calls it with less fixed ",
        ),
    ],
    ids=["operator", "operator building", "worker waiting for it", "no operator"],
)
def test_the_reason_for_the_c_kernel_claims_less_fixed_cost_only_through_the_operator(
    monkeypatch, loaded, done, detail, says
):
    """Through ctypes a call costs several µs more than through the operator, more than bmm's
    at the smallest sizes: the reason says less fixed cost than bmm's only where fused calls the
    operator, and otherwise why it does not (yet)."""
    if not fused.native.available():
        pytest.skip(f"no C kernel here: {fused.native.build().detail}")
    fused.native_op.build()  # done first: a build ending mid-test would be undone at teardown
    monkeypatch.setattr(fused.native_op, "loaded", (lambda x, w: None) if loaded else None)
    finished = threading.Event()
    if done:
        finished.set()
    monkeypatch.setattr(fused.native_op, "_done", finished)
    monkeypatch.setattr(fused.native_op, "_outcome", fused.native.Build(False, detail))
    x, w = random_inputs(2, 3, 5, seed=1)
    said = fused.fused_reason(x, w)
    assert says in said
    assert said.endswith("less fixed cost than bmm's") == loaded
    if detail and not loaded and not detail.startswith(fused.native_op.NOT_YET):
        assert said.endswith(f": {detail}")  # why there is no operator, in its own words


def test_the_reason_says_how_the_kernel_reads_long_rows(monkeypatch):
    """Where the plan reads long rows as two stripes or in even blocks (in the cache) or whole
    (from memory), the reason says so in plain words; rows short enough for four stripes get no
    such clause."""
    if not fused.native.available():
        pytest.skip(f"no C kernel here: {fused.native.build().detail}")
    monkeypatch.setattr(fused.native, "_l1", lambda: 32 * 2**10)
    monkeypatch.setattr(fused.native, "_caches", lambda: (256 * 2**10, 32 * 2**20))
    fused.native._plan.cache_clear()
    fused.native._call_shape.cache_clear()
    try:
        two = "reads two streams of them, not four"
        assert two in fused.fused_reason(*random_inputs(8, 16, 2048, seed=4))  # 1 MiB, past L2
        said = fused.fused_reason(*random_inputs(8, 16, 1024, seed=4))  # 20 KiB of L1: four
        assert two not in said and "whole" not in said
        said = fused.fused_reason(*random_inputs(2, 128, 4096, seed=4))  # 4 MiB of a 32 MiB L3
        assert "in even blocks of 1024 columns" in said and two not in said
        monkeypatch.setattr(fused.native, "_caches", lambda: (64 * 2**10, 2**20))  # a 1 MiB LLC
        fused.native._plan.cache_clear()
        fused.native._call_shape.cache_clear()
        said = fused.fused_reason(*random_inputs(1, 400, 2560, seed=4))  # 4 MiB: from memory
        assert "from memory it reads its long rows whole" in said and two not in said
        short = "it reads its short sentences four at a time"
        said = fused.fused_reason(*random_inputs(256, 32, 64, seed=4))  # 2 MiB of short rows
        assert (short in said) == (fused.native._lanes() >= 16) and "whole" not in said
        assert short not in fused.fused_reason(*random_inputs(32, 64, 272, seed=4))  # longer
        said = fused.fused_reason(*random_inputs(64, 16, 384, seed=4))  # longer, but few of them
        assert (short in said) == (fused.native._lanes() >= 16)
        said = fused.fused_reason(*random_inputs(64, 32, 256, seed=4))  # 2 MiB: two stripes
        assert ("its short sentences two at a time" in said) == (fused.native._lanes() >= 16)
        blocks = "it sums each sentence a block of columns at a time in registers"
        said = fused.fused_reason(*random_inputs(64, 8, 1024, seed=4))  # 2 MiB, 8 rows a sentence
        assert (blocks in said) == (fused.native._lanes() >= 16) and short not in said
        said = fused.fused_reason(*random_inputs(64, 4, 3000, seed=4))  # 3 MiB, rows > BLOCK_H
        assert (blocks in said) == (fused.native._lanes() >= 16)
        said = fused.fused_reason(*random_inputs(32, 16, 1024, seed=4))  # more rows: stripes
        assert blocks not in said and (short in said) == (fused.native._lanes() >= 16)
    finally:
        fused.native._plan.cache_clear()
        fused.native._call_shape.cache_clear()


def test_without_the_c_kernel_tiny_runs_the_one_liner_and_the_row_sum_takes_over_later(
    monkeypatch,
):
    """Without the C kernel (float64, or no compiler) the sizes decide: the one-liner for tiny
    inputs, bmm, then the embedding-bag row sum; the reason names the missing kernel."""
    assert fused.choose_method("cpu", (2, 3, 5), torch.float64) == "broadcast"
    assert fused.choose_method("cpu", (8, 64, 128), torch.float64) == "bmm"
    x, w = random_inputs(8, 64, 128, seed=2)
    said = fused.fused_reason(x.double(), w.double())
    assert said.startswith("no C kernel for this input (the C kernel takes float32 only")
    assert "65,536 numbers, under the 262,144" in said
    gone = fused.native.Build(False, "no C compiler found (cc, gcc, clang)")
    monkeypatch.setattr(fused.native, "build", lambda: gone)
    assert fused.choose_method("cpu", (2, 3, 5), torch.float32) == "broadcast"
    assert fused.choose_method("cpu", (8, 64, 128), torch.float32) == "bmm"
    assert fused.choose_method("cpu", (2, 256, 512), torch.float32) == "fused"
    assert fused.fused_reason(x, w).startswith("no C kernel for this input (no C compiler found")


@pytest.mark.parametrize(
    ("shape", "dtype", "num_sms"),
    [
        ((8, 16384, 1024), torch.float16, 132),
        ((8, 16384, 1024), torch.float32, 132),
        ((1, 1000, 33), torch.float32, 4),
        ((64, 4096, 4096), torch.bfloat16, 132),
        ((2, 3, 5), torch.float32, 132),
        ((3, 1, 7), torch.float32, 132),
    ],
)
def test_triton_config_covers_t_and_gives_every_sm_work(shape, dtype, num_sms):
    b, t, h = shape
    cfg = fused.triton_config(shape, dtype, num_sms)
    split, chunk, bt, bh = cfg["SPLIT"], cfg["T_PER_SPLIT"], cfg["BLOCK_T"], cfg["BLOCK_H"]
    assert chunk % bt == 0
    assert split * chunk >= t > (split - 1) * chunk  # every word in exactly one chunk, none empty
    programs = b * -(-h // bh) * split
    max_useful = b * -(-h // bh) * -(-t // (4 * bt))  # no chunk shorter than 4 tiles
    assert programs >= min(4 * num_sms, max_useful)
    assert bh & (bh - 1) == 0 and bt & (bt - 1) == 0  # powers of two (tl.arange needs them)


def test_small_batch_splits_t_on_a_gpu_sized_machine():
    cfg = fused.triton_config((8, 16384, 1024), torch.float16, 132)
    assert cfg["SPLIT"] > 1


@pytest.mark.slow  # a fresh interpreter importing torch (~2 s)
def test_attnviz_works_without_triton():
    code = textwrap.dedent(
        """
        import sys
        sys.modules["triton"] = None  # import triton now raises ImportError
        import torch, attnviz
        from attnviz import fused
        x, w = attnviz.examples.classic()
        out = attnviz.weighted_sum(x, w, method="fused")
        print(fused.triton_available(), tuple(out.shape))
        """
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["False", "(2,", "5)"]


# --- the Triton kernel in Triton's interpreter (TRITON_INTERPRET=1 must be set before import) ---

KERNEL_CASES = [
    # (name, shape, dtype, overrides)
    ("tiny classic", (2, 3, 5), "float32", {}),
    ("T and H off blocks, B=1", (1, 37, 300), "float32", {}),
    ("forced split", (3, 100, 70), "float32", {"split": 3, "block_t": 8}),
    ("T == H", (4, 17, 17), "float32", {}),
    ("B=1 long T auto split", (1, 1000, 33), "float32", {}),
    ("T = 1", (3, 1, 9), "float32", {}),
    (
        "split with ragged last chunk",
        (2, 45, 20),
        "float32",
        {"split": 4, "block_t": 4, "block_h": 8},
    ),
    ("non-contiguous", (4, 5, 10), "float32", {"strided": True}),
    ("H above one reduce block", (2, 40, 1500), "float32", {"split": 2}),
    ("float16, float32 accumulation", (3, 50, 40), "float16", {}),
    ("bfloat16, float32 accumulation", (2, 64, 24), "bfloat16", {"split": 2}),
]

SCRIPT = """
import json, sys, torch
from attnviz import fused
cases = json.loads(sys.argv[1])
out = {}
for name, shape, dtype, kw in cases:
    g = torch.Generator().manual_seed(len(name))
    b, t, h = shape
    if kw.pop("strided", False):
        big = torch.randn(t + 2, 2 * b, h + 3, generator=g, dtype=torch.float64)
        x = big.transpose(0, 1)[::2, :t, 1 : h + 1]  # (B,T,H) with odd strides
        w = torch.rand(t, 2 * b, generator=g, dtype=torch.float64).T[::2]  # (B,T) strided
        assert not x.is_contiguous()
    else:
        x = torch.randn(b, t, h, generator=g, dtype=torch.float64)
        w = torch.rand(b, t, generator=g, dtype=torch.float64)
    dt = getattr(torch, dtype)
    x, w = x.to(dt), w.to(dt)
    got = fused.weighted_sum_triton(x, w, **kw)
    out[name] = (x, w, got)
torch.save(out, sys.argv[2])
"""


@pytest.fixture(scope="module")
def kernel_results(tmp_path_factory):
    if not fused.triton_available():
        pytest.skip("triton is not installed here; the kernel's interpreter tests need it")
    path = tmp_path_factory.mktemp("triton") / "results.pt"
    env = dict(os.environ, TRITON_INTERPRET="1")
    res = subprocess.run(
        [sys.executable, "-c", SCRIPT, json.dumps(KERNEL_CASES), str(path)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    if res.returncode != 0 and "interpret" in res.stderr.lower() and "not supported" in res.stderr:
        pytest.skip(f"Triton's interpreter cannot run here: {res.stderr[-300:]}")
    assert res.returncode == 0, res.stderr[-3000:]
    return torch.load(path)


@pytest.mark.slow  # one fresh interpreter runs every case in Triton's interpreter (~3.5 s)
@pytest.mark.parametrize(
    ("name", "shape", "dtype", "kw"), KERNEL_CASES, ids=[c[0] for c in KERNEL_CASES]
)
def test_triton_kernel_matches_float64_reference(kernel_results, name, shape, dtype, kw):
    x, w, got = kernel_results[name]
    dt = getattr(torch, dtype)
    assert got.shape == (shape[0], shape[2]) and got.dtype == dt
    assert_close(got, oracle(x, w).to(dt), **TOL[dt])


def test_row_sum_path_has_the_right_gradients():
    x, w = random_inputs(2, 20, 5, seed=8, dtype=torch.float64)
    x.requires_grad_()
    w.requires_grad_()
    assert torch.autograd.gradcheck(fused.weighted_sum_rows, (x, w))


@pytest.mark.parametrize(
    "shape", [(2, 3, 5), (4, 16, 32), (4, 16, 33), (2, 128, 128), (1, 300, 200), (2, 256, 512)]
)
def test_auto_runs_the_method_choose_method_names(shape):
    x, w = random_inputs(*shape, seed=9)
    name = fused.choose_method(x.device, shape, x.dtype)
    assert torch.equal(fused.weighted_sum_auto(x, w), attnviz.METHODS[name](x, w))
