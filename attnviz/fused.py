"""The ``"fused"`` and ``"auto"`` methods: one pass over net_output, writing only (B, H).

    weighted[b, h] = sum_t w[b, t] * x[b, t, h]        x: (B, T, H), w: (B, T) -> (B, H)

The operation reads B*T*H numbers once and does two flops per number, so it is bound by memory
bandwidth on every device: the fastest path is the one that reads ``x`` exactly once, at the
speed of a plain read, and never writes a (B, T, H) temporary (the one-liner does).

- CUDA: cuBLAS's batched matrix-vector product (``torch.bmm`` of (1, T) rows by (T, H)), which
  reads x once with no temporary. Measured on an NVIDIA H200 (2026-12-04, benchmarks/RESULTS.md,
  GPU) it read x at 1.01-1.06 times ``x.sum()`` at 512 MiB in float32 and bfloat16 and
  launched in ~15-27 µs from Python, while our Triton kernel below reached 0.90 (float32) and
  0.61 (bfloat16) of bmm's speed and took 38-72 µs to launch; so "fused" and "auto" run bmm on
  CUDA. The Triton kernel (``weighted_sum_triton``) stays, tested against float64 and timed by
  benchmarks/gpu_check.py, as the one-pass kernel a reader can study. Each program owns one sentence b, one block of
  BLOCK_H hidden units and one chunk of words; it streams (BLOCK_T, BLOCK_H) tiles of x, multiplies
  by the weights and accumulates in float32 (also for float16/bfloat16 inputs). When B is small,
  B * ceil(H / BLOCK_H) programs would leave most SMs idle (B=8, H=1024: 32 programs for 132 SMs),
  so the reduction over T is split into SPLIT chunks and each chunk writes a float32 partial
  (SPLIT, B, H); a second tiny kernel sums the partials and casts to the output dtype. Partials
  cost SPLIT*B*H*4 bytes (B=8, H=1024, SPLIT=17: 0.5 MiB against 256 MiB of x) and, unlike
  ``atomic_add``, give the same bits on every run and need no zero-filled output.
- CPU: a weighted sum of rows. x is viewed as B*T rows of H numbers and each sentence's rows are
  summed with its weights in one streaming pass, no (B, T, H) temporary. For float32 the pass is
  our C kernel (``attnviz.native``, compiled on first use, on PyTorch's OpenMP threads; called as
  a PyTorch operator, ``attnviz.native_op``, once that is built, through ctypes until then), which
  we measured through this function (benchmarks/RESULTS.md; the host moves these by several
  points). On an AVX-512 host (sixth round): 0.97-1.02 of the machine's read limit (a C read
  loop, the faster of its two ways of reading) from DRAM, 0.88-0.96 in L3, and in L2 0.89-0.97
  from 1 MiB on, 0.89 at 512 KiB, where returning a new tensor costs ~0.5 µs of a 3.8 µs call
  (rows off the 64-byte lines in L2: 0.76-0.83). On an AVX2 host (eighth round, medians of five
  runs): 0.95-0.99 from DRAM, 0.85-0.97 in L3 (two threads splitting a sentence: 0.85), and in
  L2 0.78-0.86 on one thread, 0.69-0.85 on two. On an Intel Xeon (ninth round, medians of five
  runs; from beyond L2 the stripes ask for their lines ahead where a shape's first call timed
  that faster): 0.95-1.01 from DRAM and the L3, in L2 0.85-0.91 (rows off the lines 0.68-0.84).
  On a Zen 4 EPYC (seventeenth round): 0.95-1.00 from DRAM and the L3, in L2 0.90-0.99 (8x64x128
  on one thread 0.895), short rows off the lines 0.88-0.95 (in sentences of 16 rows or fewer
  0.82-0.91, rows of 13-15 numbers 0.65-0.85) and H = 777 on two threads 0.82-0.84; rows of
  more than ~1200 numbers (eighteenth round: two stripes in the cache, whole rows from DRAM)
  0.83-0.97 in the cache and 0.84-1.02 from DRAM, where they had been 0.65-0.89.
  The outputs come from blocks kept for the next call (``native_op``). Without a C compiler,
  for the other dtypes and for inputs that need gradients, the same row sum runs through PyTorch's
  embedding-bag kernel (``weighted_sum_rows``, ``F.embedding_bag(..., per_sample_weights=w)``,
  sentences cut into chunks when B is small), which has a backward and is somewhat slower.
  ``torch.bmm`` is slower still on the CPUs we measured, and einsum several times slower, because
  torch 2.13 lowers "bth,bt->bh" to ``bmm(x.permute(0, 2, 1), w[..., None])``, a (H, T) @ (T, 1)
  product over a transposed, strided x (seen with torch.profiler). ``torch.compile`` of the
  one-liner was slower than bmm after many seconds of compiling, so it is not used. The C kernel
  runs at every size: at 2x3x5 a call of its builtin took 0.51 µs, through ctypes 4.3 µs, bmm 6.5
  µs and the one-liner 7.1 (AVX2 host, 2026-12-04, benchmarks/RESULTS.md, "Small sizes again").
  Strided x goes to bmm. The numbers behind each of these statements, with the commands that
  measure them on your machine (``python -m attnviz.bench``), are in benchmarks/RESULTS.md.

Triton is imported lazily: attnviz imports and works without it. Set ``TRITON_INTERPRET=1`` before
the first import of triton to run the kernel on CPU tensors (slowly) in Triton's interpreter;
that is how the tests check it on machines without a GPU.
"""

from __future__ import annotations

import functools
import math

import torch
from torch import Tensor

from attnviz import native, native_op


@functools.cache
def triton_available() -> bool:
    """True when ``import triton`` works (lazily tried once)."""
    try:
        import triton  # noqa: F401
        import triton.language  # noqa: F401
    except Exception:  # ImportError, or a broken install raising anything else
        return False
    return True


def _bmm(x: Tensor, w: Tensor) -> Tensor:
    """x: (B, T, H), w: (B, T) -> (B, H) through one batched (1, T) @ (T, H) product."""
    return torch.bmm(w[:, None, :], x)[:, 0, :]  # (B,1,T) @ (B,T,H) -> (B,1,H) -> (B,H)


# Without the C kernel (no compiler, another dtype, autograd), the embedding-bag row sum beats
# bmm only from this many numbers on (benchmarks/RESULTS-cpu-history.md, "Small sizes").
CPU_ROWS_MIN_NUMEL = 1 << 18


def _kernel_takes(dtype: torch.dtype) -> bool:
    """True when the C kernel runs fused for CPU inputs of ``dtype`` (of any size): float32, where
    it builds (the first call builds it)."""
    return dtype == torch.float32 and native.available()


def cpu_chunks(b: int, t: int, threads: int) -> int:
    """How many chunks of words each sentence is cut into on the CPU so every thread has work."""
    return 1 if b >= 2 * threads else min(t, math.ceil(2 * threads / b))


@functools.lru_cache(maxsize=16)
def _bags(b: int, t: int, threads: int) -> tuple[Tensor, Tensor]:
    """Row indices (B*T,) and bag starts (B*S,) for ``weighted_sum_rows``; cached (never written)."""
    s = cpu_chunks(b, t, threads)
    chunk = math.ceil(t / s)
    s = math.ceil(t / chunk)
    starts = torch.arange(b)[:, None] * t + torch.arange(s)[None, :] * chunk  # (B,S)
    return torch.arange(b * t), starts.reshape(-1)


def weighted_sum_rows(x: Tensor, w: Tensor) -> Tensor:
    """x: (B, T, H) contiguous, w: (B, T) -> (B, H) as a weighted sum of rows of x.

    x viewed as B*T rows of H numbers; each sentence (or chunk of one, when B is smaller than twice
    the thread count) is a "bag" of consecutive rows, summed with the weights w by PyTorch's
    embedding-bag kernel: one streaming pass over the rows, parallel over bags, prefetching ahead,
    no (B, T, H) temporary. Chunks give partial sums (B, S, H) that a tiny sum finishes.
    """
    b, t, h = x.shape
    rows, starts = _bags(b, t, torch.get_num_threads())
    s = starts.numel() // b
    out = torch.nn.functional.embedding_bag(
        rows,  # (B*T,) every row once, in order
        x.reshape(b * t, h),  # (B*T,H), a view: x is contiguous
        starts,  # (B*S,) the first row of each bag
        mode="sum",
        per_sample_weights=w.reshape(-1),  # (B*T,)
    )  # (B*S,H)
    return out.view(b, s, h).sum(dim=1) if s > 1 else out  # (B,H)


def weighted_sum_fused(x: Tensor, w: Tensor) -> Tensor:
    """x: (B, T, H), w: (B, T) -> (B, H) in one pass over x.

    CPU with a contiguous x: the weighted row sum, by the C kernel (``attnviz.native``) for
    float32 where it builds, at every size, else by embedding-bag (``weighted_sum_rows``) from
    CPU_ROWS_MIN_NUMEL on. Everywhere else (CUDA, MPS, strided x, small x without the kernel):
    the batched matrix-vector product, which also reads x once. On CUDA that is
    cuBLAS's, measured on an H200 at the read limit and ahead of our Triton kernel
    (``weighted_sum_triton``, kept and tested, not dispatched to: benchmarks/RESULTS.md, GPU).
    """
    # first, before any check here: at 0.5 MiB in L2 a call takes ~5 µs, and each check ~0.1 µs.
    # The operator's builtin (or the operator) answers None where the kernel does not apply or has
    # no plan yet for this shape: the ctypes path below makes it
    if (op := native_op.loaded) is not None and (out := op(x, w)) is not None:
        return out
    if x.is_cpu:
        out = native.try_weighted_rows(x, w)  # through ctypes; None where it does not apply
        if out is not None:
            native_op.learn(x, torch.get_num_threads())  # the operator's plan for this shape
            return out
        if x.numel() >= CPU_ROWS_MIN_NUMEL and x.is_contiguous():
            return weighted_sum_rows(x, w)
        return _bmm(x, w)
    return _bmm(x, w)  # CUDA, MPS: cuBLAS's (the backend's) batched matrix-vector product


def fused_path(x: Tensor, w: Tensor) -> str:
    """Which implementation ``weighted_sum_fused(x, w)`` runs, in words (for tables and pages)."""
    if x.device.type == "cpu" and x.is_contiguous():
        if native.usable(x, w):
            return "C row-sum kernel"
        if x.numel() >= CPU_ROWS_MIN_NUMEL:
            return "embedding-bag row sum"
    return "bmm"


def fused_reason(x: Tensor, w: Tensor) -> str:
    """Why ``weighted_sum_fused(x, w)`` runs what ``fused_path`` names, in one clause (tables, the
    Performance page): e.g. why float64 runs as bmm."""
    path = fused_path(x, w)
    n = x.numel()
    if path == "bmm" and x.device.type == "cpu":
        if not x.is_contiguous():
            return "x is strided, and the row sum reads contiguous rows"
        return (
            f"no C kernel for this input ({_no_kernel(x)}), and x has {n:,} numbers, under the "
            f"{CPU_ROWS_MIN_NUMEL:,} from which PyTorch's embedding-bag row sum beats bmm"
        )
    if path == "bmm" and x.device.type == "cuda":
        return (
            "on CUDA, cuBLAS's batched matrix-vector product reads x once at the memory's speed "
            "and launches sooner than our Triton kernel (benchmarks/RESULTS.md, GPU)"
        )
    if path == "bmm":
        return f"no one-pass kernel for {x.dtype} on {x.device.type} here"
    if path == "embedding-bag row sum":
        return f"no C kernel for this input ({_no_kernel(x)})"
    reason = "one pass over x, no (B, T, H) temporary, and a call with less fixed cost than bmm's"
    if (through_ctypes := native_op.why_ctypes()) is not None:  # the claim is the operator's
        reason = (
            f"one pass over x and no (B, T, H) temporary, called through ctypes {through_ctypes}"
        )
    threads = torch.get_num_threads()
    if x.dim() == 3:  # how its stripes read long rows, where the plan says (native.stripe_bits)
        bits = native.call_plan(*x.shape, threads)[0][6]
        if bits & native.TWO_STRIPES:
            reason += (
                "; its rows are long for the L1 cache, so it reads two streams of them, not four"
            )
        elif (
            bits & native.SENTENCE_STRIPES
            and bits & native.WHOLE_ROWS
            and x.shape[2] > native.STRIPED_COLUMNS
            and x.shape[1] <= native.BLOCK_ROWS
        ):  # as csrc/long_sentences.h's striped_long_sentences
            reason += (
                "; its sentences are short and their rows long, so it sums each sentence a block"
                " of columns at a time in registers, and asks for the next sentence's lines"
                " ahead as it reads"
            )
        elif bits & native.WHOLE_ROWS and x.shape[2] > native.BLOCK_H:
            reason += "; from memory it reads its long rows whole, not in blocks of columns"
        elif bits & native.SENTENCE_STRIPES:
            two = native.SHORT_PAIR < x.shape[2] <= native.STRIPED_COLUMNS  # as csrc/short_rows.h
            k = "two" if two else "four"
            reason += (
                f"; it reads its short sentences {k} at a time, from {k} places far apart:"
                f" {k} long streams, as the read limit reads x in streams side by side"
            )
        elif native.few_rows(*x.shape, threads):
            reason += (
                "; its sentences have few rows, so it sums each stretch of columns down all of"
                " them at once, the sums kept in registers"
            )
        elif block := bits >> native.BLOCK_SHIFT:
            reason += (
                f"; it reads its long rows in even blocks of {block} columns, so that each"
                " block's running sums stay in the L1 cache"
            )
    ahead = native.asks_ahead(*x.shape, threads) if x.dim() == 3 else None
    if ahead is not None and native.may_ask_ahead(*x.shape, threads):  # timed: which way won
        kept = "asking for x's lines ahead of its loads" if ahead else "plain loads"
        reason += f"; its first call timed two ways of loading x here and kept the faster, {kept}"
    return reason


def _no_kernel(x: Tensor) -> str:
    """Why the C kernel does not run on the contiguous CPU tensor x, in a few words."""
    built = native.build()
    if not built.ok:
        return built.detail
    if x.dtype != torch.float32:
        return f"the C kernel takes float32 only, x is {x.dtype}"
    return "x needs a gradient, and the C kernel has no backward"


# ---------------------------------------------------------------------------------------------
# "auto": the fastest method for the device and the size.

# Without the C kernel: below this many elements of x the call is dominated by fixed costs
# (Python, dispatch, a kernel launch), not by bytes: the one-liner's two small kernels beat bmm's
# setup on CPU.
TINY_CPU_NUMEL = 2048


def choose_method(
    device: torch.device | str, shape: tuple[int, int, int], dtype: torch.dtype
) -> str:
    """The name of the method ``"auto"`` runs for x of ``shape`` (B, T, H) and ``dtype`` on ``device``.

    CUDA and MPS: "bmm" (on CUDA cuBLAS's batched matrix-vector product, which read x at the
    memory's speed and beat our Triton kernel at every size and dtype we measured). CPU: "fused"
    at every size where the C kernel takes the dtype (float32, where it builds): the fastest we
    measured, and at small sizes the leanest call. Without it: "fused" (the embedding-bag row
    sum) from CPU_ROWS_MIN_NUMEL numbers on, "bmm" below, and "broadcast" for tiny inputs, where
    it has the least fixed overhead.
    """
    device = torch.device(device)
    b, t, h = shape
    if device.type == "cpu":
        if _kernel_takes(dtype):
            return "fused"
        if b * t * h <= TINY_CPU_NUMEL:
            return "broadcast"
        return "fused" if b * t * h >= CPU_ROWS_MIN_NUMEL else "bmm"
    return "bmm"


def weighted_sum_auto(x: Tensor, w: Tensor) -> Tensor:
    """x: (B, T, H), w: (B, T) -> (B, H) with the method ``choose_method`` picks for x."""
    # the same rule as choose_method; is_cpu / is_cuda are cheaper than building x.device
    if (op := native_op.loaded) is not None and (out := op(x, w)) is not None:
        return out  # the C kernel's builtin: fused, as choose_method picks it for float32 CPU x
    if x.is_cpu:
        if _kernel_takes(x.dtype):
            return weighted_sum_fused(x, w)
        n = x.numel()
        if n <= TINY_CPU_NUMEL:
            return (x * w[..., None]).sum(dim=1)  # (B,T,H) * (B,T,1) -> (B,H): the one-liner
        return weighted_sum_fused(x, w) if n >= CPU_ROWS_MIN_NUMEL else _bmm(x, w)  # (B,H)
    return _bmm(x, w)  # (B,H): CUDA, MPS


# ---------------------------------------------------------------------------------------------
# The Triton kernel (CUDA, or CPU tensors under TRITON_INTERPRET=1).


def _next_pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def _num_sms(device: torch.device) -> int:
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).multi_processor_count
    return 4  # the interpreter: any small number exercises the split path


def triton_config(
    shape: tuple[int, int, int],
    dtype: torch.dtype,
    num_sms: int,
    *,
    block_t: int | None = None,
    block_h: int | None = None,
    split: int | None = None,
    num_warps: int | None = None,
) -> dict[str, int]:
    """Block sizes, split count and warps for x of ``shape`` (B, T, H) on a GPU with ``num_sms``.

    Defaults: BLOCK_H covers up to 256 hidden units (128 for float32, so a tile stays in
    registers), BLOCK_T words per step (a 16 KiB tile per step); SPLIT chunks of T so that
    B * ceil(H / BLOCK_H) * SPLIT programs give every SM about four programs, but no chunk shorter
    than 4 * BLOCK_T words.
    """
    b, t, h = shape
    esize = torch.empty((), dtype=dtype).element_size()
    if block_h is None:
        block_h = min(_next_pow2(h), 256 if esize <= 2 else 128)
    if block_t is None:
        block_t = max(1, min(_next_pow2(t), 16384 // (block_h * esize)))
    n_hblocks = math.ceil(h / block_h)
    if split is None:
        want = math.ceil(4 * num_sms / max(1, b * n_hblocks))
        split = max(1, min(want, math.ceil(t / (4 * block_t))))
    split = max(1, min(split, t))
    # chunk length in words, a multiple of block_t; recompute split so no chunk is empty
    t_per_split = math.ceil(math.ceil(t / split) / block_t) * block_t
    split = math.ceil(t / t_per_split)
    if num_warps is None:
        num_warps = 8 if block_t * block_h >= 8192 else 4
    return {
        "BLOCK_T": block_t,
        "BLOCK_H": block_h,
        "SPLIT": split,
        "T_PER_SPLIT": t_per_split,
        "num_warps": num_warps,
    }


@functools.cache
def _kernels():
    """Compile-on-first-use: define the two @triton.jit kernels (imports triton)."""
    import triton
    import triton.language as tl

    @triton.jit
    def partial_kernel(
        x_ptr,
        w_ptr,
        out_ptr,
        T,
        H,
        t_per_split,
        stride_xb,
        stride_xt,
        stride_xh,
        stride_wb,
        stride_wt,
        stride_os,
        stride_ob,
        stride_oh,
        BLOCK_T: tl.constexpr,
        BLOCK_H: tl.constexpr,
    ):
        # program (sentence b * h blocks + h block, chunk s) -> out[s, b, h block]; axis 0 has no
        # 65535 limit (axes 1 and 2 do), and neighbouring programs read neighbouring h blocks
        n_hblocks = tl.cdiv(H, BLOCK_H)
        pid = tl.program_id(0)
        pid_b = (pid // n_hblocks).to(tl.int64)
        pid_h = pid % n_hblocks
        pid_s = tl.program_id(1)
        offs_h = pid_h * BLOCK_H + tl.arange(0, BLOCK_H)  # (BLOCK_H,)
        h_ok = offs_h < H
        t_start = pid_s * t_per_split
        t_end = tl.minimum(t_start + t_per_split, T)
        x_row = x_ptr + pid_b * stride_xb
        w_row = w_ptr + pid_b * stride_wb
        acc = tl.zeros((BLOCK_T, BLOCK_H), dtype=tl.float32)  # (BLOCK_T, BLOCK_H)
        for t0 in range(t_start, t_end, BLOCK_T):
            offs_t = t0 + tl.arange(0, BLOCK_T)  # (BLOCK_T,)
            t_ok = offs_t < t_end
            wv = tl.load(w_row + offs_t * stride_wt, mask=t_ok, other=0.0).to(tl.float32)
            ptrs = (
                x_row
                + offs_t.to(tl.int64)[:, None] * stride_xt
                + offs_h.to(tl.int64)[None, :] * stride_xh
            )  # (BLOCK_T, BLOCK_H)
            xv = tl.load(ptrs, mask=t_ok[:, None] & h_ok[None, :], other=0.0).to(tl.float32)
            acc += xv * wv[:, None]  # (BLOCK_T,BLOCK_H) * (BLOCK_T,1)
        total = tl.sum(acc, axis=0)  # (BLOCK_H,)
        dst = out_ptr + pid_s * stride_os + pid_b * stride_ob + offs_h * stride_oh
        tl.store(dst, total.to(out_ptr.dtype.element_ty), mask=h_ok)

    @triton.jit
    def reduce_kernel(
        part_ptr,
        out_ptr,
        S,
        H,
        stride_ps,
        stride_pb,
        stride_ob,
        stride_oh,
        BLOCK_H: tl.constexpr,
    ):
        # program (sentence b * h blocks + h block): out[b, h block] = sum over s of part[s, b, ...]
        n_hblocks = tl.cdiv(H, BLOCK_H)
        pid = tl.program_id(0)
        pid_b = (pid // n_hblocks).to(tl.int64)
        pid_h = pid % n_hblocks
        offs_h = pid_h * BLOCK_H + tl.arange(0, BLOCK_H)
        h_ok = offs_h < H
        acc = tl.zeros((BLOCK_H,), dtype=tl.float32)
        src = part_ptr + pid_b * stride_pb + offs_h
        for s in range(0, S):
            acc += tl.load(src + s * stride_ps, mask=h_ok, other=0.0)
        tl.store(
            out_ptr + pid_b * stride_ob + offs_h * stride_oh,
            acc.to(out_ptr.dtype.element_ty),
            mask=h_ok,
        )

    return partial_kernel, reduce_kernel


def weighted_sum_triton(
    x: Tensor,
    w: Tensor,
    *,
    block_t: int | None = None,
    block_h: int | None = None,
    split: int | None = None,
    num_warps: int | None = None,
) -> Tensor:
    """x: (B, T, H), w: (B, T) -> (B, H) by the split-T Triton kernel, float32 accumulation.

    Needs triton, and CUDA tensors (or CPU tensors with TRITON_INTERPRET=1). Any strides work.
    The keyword arguments override ``triton_config``'s choices (for tuning and for tests).
    """
    import triton  # lazy; raises ImportError where triton is missing

    partial_kernel, reduce_kernel = _kernels()
    b, t, h = x.shape
    out = torch.empty(b, h, dtype=x.dtype, device=x.device)  # (B,H)
    if b == 0 or h == 0:
        return out
    if t == 0:
        return out.zero_()
    cfg = triton_config(
        (b, t, h),
        x.dtype,
        _num_sms(x.device),
        block_t=block_t,
        block_h=block_h,
        split=split,
        num_warps=num_warps,
    )
    s = cfg["SPLIT"]
    # one chunk: the kernel writes the result directly; else float32 partials (S, B, H) first
    dst = out[None] if s == 1 else torch.empty(s, b, h, dtype=torch.float32, device=x.device)
    grid = (b * triton.cdiv(h, cfg["BLOCK_H"]), s)
    partial_kernel[grid](
        x,
        w,
        dst,
        t,
        h,
        cfg["T_PER_SPLIT"],
        *x.stride(),
        *w.stride(),
        *dst.stride(),
        BLOCK_T=cfg["BLOCK_T"],
        BLOCK_H=cfg["BLOCK_H"],
        num_warps=cfg["num_warps"],
    )
    if s > 1:
        rb = min(_next_pow2(h), 1024)
        reduce_kernel[(b * triton.cdiv(h, rb),)](
            dst, out, s, h, dst.stride(0), dst.stride(1), *out.stride(), BLOCK_H=rb, num_warps=4
        )
    return out
