# %% [markdown]
# # Lesson 3 · CPU vs GPU: timing done right
#
# Which way of writing the weighted sum is fastest, on a CPU and on a GPU? Answering that takes
# honest measurements, and the classic ways of getting them wrong are shown live below. Then you
# write a timer that a pretend GPU cannot fool, run a small sweep, work out why the one-liner
# allocates memory, and meet the fused kernel that does not.
#
# Everything here runs on a laptop CPU in seconds, on tiny sizes. Where a GPU would behave
# differently, the text says how; if this machine has a CUDA GPU, the cells measure it too.

# %%
import time

import torch

import attnviz
from attnviz import bench
from attnviz.bench import recorded
from attnviz.bench.sweep import sweep
from attnviz.exercises import VirtualGPU, check_intermediate_bytes, check_timer
from attnviz.figures import performance

has_gpu = torch.cuda.is_available()
for info in bench.list_devices():
    print(f"{info.device:<8} {info.name}")


def sync() -> None:
    """Wait until the device has finished its queued work (a no-op on the CPU)."""
    if has_gpu:
        torch.cuda.synchronize()


# %% [markdown]
# ## 1. What the operation costs
#
# `weighted[b, h] = Σ_t att_scores[b, t] · net_output[b, t, h]` reads every number of
# `net_output` once and does two operations with it (a multiply and an add). Moving a number
# from memory costs far more time than two arithmetic operations on any modern chip, so the
# speed limit is **how fast the machine reads**: the best any method can do is read the bytes once,
# as fast as a plain read loop reads them. The harness times such a loop (on the CPU a few lines of
# C built like the fused kernel, `attnviz.native_read.read_sum`) as the *floor*, the machine's read
# limit.
#
# - **No method can beat the read limit**: every method must bring each number of `net_output`
#   to the cores at least once, and the read loop does nothing else.
# - **In cache it is faster than in memory**: data that fits in a cache sits beside the cores,
#   while data from memory (DRAM) crosses a longer, narrower path shared by every core, so the
#   same loop reads small inputs several times faster than large ones.

# %%
shape = (16, 128, 256)  # (B, T, H)
moved = bench.moved_bytes(shape, torch.float32)
flops = 2 * shape[0] * shape[1] * shape[2]
print(f"B, T, H = {shape}: moves {moved:,} bytes for {flops:,} operations")
print(
    f"that is {bench.format_number(flops / moved)} operations per byte: far too few to keep any chip busy"
)

# %% [markdown]
# ## 2. Three classic timing mistakes, live
#
# ### Mistake 1: one sample
#
# The same call, timed seven times in a row. The operating system, other programs, caches and
# the CPU's clock speed all move the numbers; a single sample is one draw from that spread.

# %%
x, w = bench.make_inputs(shape)
samples = []
for _ in range(7):
    start = time.perf_counter()
    attnviz.weighted_sum(x, w)
    samples.append(time.perf_counter() - start)
print("seven samples:", ", ".join(bench.format_time(s) for s in samples))
print(f"slowest / fastest = {bench.format_number(max(samples) / min(samples))}x")

# %% [markdown]
# ### Mistake 2: no warm-up
#
# The first call of an operation pays one-time costs: loading code, choosing a kernel, allocating
# memory, and on a GPU possibly compiling a kernel (Triton compiles on first use, which takes
# from a fraction of a second to seconds). Compare the first call of a method this process has
# not run yet with the calls after it.

# %%
fresh_x, fresh_w = bench.make_inputs((24, 96, 200), seed=1)
start = time.perf_counter()
attnviz.weighted_sum(fresh_x, fresh_w, method="einsum")
first = time.perf_counter() - start
later = []
for _ in range(9):
    start = time.perf_counter()
    attnviz.weighted_sum(fresh_x, fresh_w, method="einsum")
    later.append(time.perf_counter() - start)
median_later = sorted(later)[len(later) // 2]
print(
    f"first call {bench.format_time(first)}, median of the next nine "
    f"{bench.format_time(median_later)}"
)
print(f"the first call took {bench.format_number(first / median_later)}x the usual time")

# %% [markdown]
# ### Mistake 3: no synchronize
#
# On a CPU, `attnviz.weighted_sum(x, w)` returns when the answer is ready. On a GPU it returns as
# soon as the work is **queued**: the kernel runs later, while Python moves on. A clock read right
# after the call measures only the launch (a few microseconds), however long the work takes.
# `torch.cuda.synchronize()` waits for the queue to drain.
#
# A CPU cannot show this, so here is a pretend GPU (`attnviz.exercises.VirtualGPU`): `op()`
# queues 500 µs of work and returns after 10 µs; `sync()` waits for the work; `clock()` reads
# its time in seconds. It is the same device the timer exercise below is checked on.

# %%
gpu = VirtualGPU(launch=10e-6, warm=500e-6, cold=20e-3)
gpu.op()  # warm-up: the first call is the slow one
gpu.sync()

start = gpu.clock()
gpu.op()
print(f"without sync: {bench.format_time(gpu.clock() - start)}  (only the launch)")
gpu.sync()

start = gpu.clock()
gpu.op()
gpu.sync()
print(f"with sync:    {bench.format_time(gpu.clock() - start)}  (the work itself)")

# %%
if has_gpu:  # the real thing, on a CUDA GPU
    big_x, big_w = (t.cuda() for t in bench.make_inputs((64, 1024, 1024)))
    attnviz.weighted_sum(big_x, big_w)
    torch.cuda.synchronize()
    start = time.perf_counter()
    attnviz.weighted_sum(big_x, big_w)
    no_sync = time.perf_counter() - start
    torch.cuda.synchronize()
    start = time.perf_counter()
    attnviz.weighted_sum(big_x, big_w)
    torch.cuda.synchronize()
    with_sync = time.perf_counter() - start
    print(
        f"CUDA, 64x1024x1024: {bench.format_time(no_sync)} without sync, "
        f"{bench.format_time(with_sync)} with"
    )
else:
    print("No CUDA GPU here: on one, the first number would be a few µs whatever the size.")

# %% [markdown]
# ### Exercise 1: a timer that cannot be fooled
#
# Write `time_it(op, repeats, clock, sync)`: it returns a list of `repeats` durations in seconds,
# one per call of `op()`. Use the `clock` and `sync` you are given (not `time.perf_counter`), warm
# up first, and make sure each duration covers the work itself, not just its launch.
#
# The check runs your timer on pretend GPUs with random speeds, where the first call is slow and
# `op()` returns before its work is done; a correct timer reports exactly the time one warm call
# takes.


# %%
def time_it(op, repeats: int, clock, sync) -> list[float]:
    """Call op() `repeats` times after a warm-up; return the duration of each call in seconds."""
    # BEGIN SOLUTION
    op()  # warm-up: one-time costs stay out of the samples
    sync()  # ... and must be finished before the clock starts
    times = []
    for _ in range(repeats):
        start = clock()
        op()
        sync()  # wait for the work, not just the launch
        times.append(clock() - start)
    return times
    # END SOLUTION


# %%
check_timer(time_it)

# %% [markdown]
# Your timer works on the real device too: pass it `time.perf_counter` and the `sync` defined at
# the top (a no-op on the CPU, `torch.cuda.synchronize` on a GPU).

# %%
try:
    mine = time_it(lambda: attnviz.weighted_sum(x, w), 15, time.perf_counter, sync)
    mine.sort()
    print(f"weighted_sum on {shape}: median {bench.format_time(mine[len(mine) // 2])}, ", end="")
    print(
        f"middle half {bench.format_time(mine[len(mine) // 4])} to "
        f"{bench.format_time(mine[3 * len(mine) // 4])}"
    )
except NotImplementedError:
    print("Write time_it above first.")
except Exception as exc:  # whatever your timer raises, this cell explains it and carries on
    print(f"Your time_it raised {type(exc).__name__}: {exc}. The check above says more.")

# %% [markdown]
# ## 3. Timing done right, and a small sweep
#
# `attnviz.bench.measure` does all of this and more: it times the first call apart, warms up,
# synchronizes, runs blocks of many calls, interleaves the methods round by round (so a busy
# neighbour slows all of them alike) and reports the median and the interquartile range (IQR),
# with the floor measured in the same rounds. `ratio_to_floor` says how close a method comes to the
# read limit (1.00 is as fast as the machine reads); a method that takes less time than the plain read
# of x by more than the rounds' spread is flagged with a `!`, because then the floor, not the method,
# is wrong.

# %%
records = bench.measure(
    shape, methods=("broadcast", "einsum", "bmm", "fused"), rounds=5, min_block_s=0.002
)
print(bench.format_table(records))

# %% [markdown]
# A sweep repeats that over sizes. Tiny sizes measure fixed costs (Python, dispatch, on a GPU the
# kernel launch); large sizes measure bandwidth. The sizes here stay small so that the notebook
# runs in seconds; on a shared or busy machine expect noise, which is exactly why the harness
# reports the spread.

# %%
records = sweep(
    devices="all" if has_gpu else "cpu",
    sizes=[(2, 3, 5), (8, 32, 64), (16, 128, 128), (32, 128, 256)],
    methods=("broadcast", "bmm", "fused"),
    rounds=3,
    min_block_s=0.002,
    memory=False,
)
performance.time_vs_bytes_figure(records)

# %%
performance.roofline_figure(records)

# %% [markdown]
# **What a GPU shows.** Run this notebook on a CUDA machine (on Colab: *Runtime → Change runtime
# type → GPU*) and the sweep adds GPU lines. At the small sizes every GPU method costs about the
# same: the launch, not the work, so the CPU wins there. As the inputs grow, the GPU's time stays
# flat until the bytes dominate, then grows with them at a bandwidth many times the CPU's; the
# figure marks the size where the GPU starts to win. `python -m attnviz.bench --device all` runs
# the full sweep from a terminal. Without a GPU, here is one we measured (attnviz ships the run,
# `attnviz.bench.recorded`; every number below is computed from its records):

# %%
print(recorded.summary())
share = "of the copy's bandwidth"
for row in recorded.rows():
    if row["method"] in ("copy", "broadcast", "fused"):
        print(
            f"{row['shape']:>14} {row['dtype']:<9} {row['method']:<10} {row['median']:>8} "
            f"{row['bandwidth']:>10}  ({row[share]} of the copy's)"
        )

# %% [markdown]
# ## 4. Why the one-liner allocates
#
# `(net_output * att_scores[..., None]).sum(dim=1)` runs as two operations. The product is a
# complete (B, T, H) tensor written to memory, then read back by the sum: the stretched
# `att_scores[..., None]` costs nothing (stride 0), but the product does.
#
# ### Exercise 2: how big is the temporary?
#
# Write `intermediate_bytes(b, t, h, dtype)`: the number of bytes of that (B, T, H) product, as an
# int, for inputs of dtype `dtype` (a `torch.dtype`; every element of a float16 tensor takes 2
# bytes, float32 4, float64 8).


# %%
def intermediate_bytes(b: int, t: int, h: int, dtype: torch.dtype) -> int:
    """Bytes of the (B, T, H) temporary made by net_output * att_scores[..., None]."""
    # BEGIN SOLUTION
    return b * t * h * torch.empty((), dtype=dtype).element_size()
    # END SOLUTION


# %%
check_intermediate_bytes(intermediate_bytes)

# %% [markdown]
# Now measure it: `bench.peak_extra_bytes` records the peak memory allocated while a call runs,
# above what was there before, the (B, H) result included (on the CPU through torch's profiler
# and the size of what the call returns, on CUDA through the allocator's peak counter).

# %%
device = "cuda" if has_gpu else "cpu"
mx, mw = (t.to(device) for t in bench.make_inputs(shape))
for method in ("broadcast", "bmm", "fused"):
    peak = bench.peak_extra_bytes(lambda m=method: attnviz.weighted_sum(mx, mw, method=m), device)
    print(f"{method:<10} peak extra memory {peak:>10,} bytes")
try:
    print(
        f"{'predicted':<10} temporary         {intermediate_bytes(*shape, torch.float32):>10,} bytes"
    )
except NotImplementedError:
    print("Write intermediate_bytes above to compare with your prediction.")
except Exception as exc:  # whatever your function raises, this cell explains it and carries on
    print(f"Your intermediate_bytes raised {type(exc).__name__}: {exc}. The check above says more.")

# %% [markdown]
# ## 5. The fused kernel
#
# A method that multiplies and adds as it reads, keeping running sums instead of writing the
# product, needs only the (B, H) output: one pass over the bytes, no temporary. That is what
# `method="fused"` does. On a CUDA GPU that is cuBLAS's batched matrix-vector product: it already
# reads x once at the memory's speed, and in the run above it beat our own Triton kernel
# (`attnviz.fused.weighted_sum_triton`, kept for reading). On a CPU it is about thirty lines of C (`attnviz/csrc/weighted_rows.c`, compiled the first time it is
# needed) that stream the rows of x past running sums kept in the L1 cache, at the speed of a
# plain read. The C kernel takes float32 and runs at every size: where a call is nearly all fixed
# cost, its call is also the leanest, a few checks in C where a PyTorch op goes through its
# dispatcher. Without it (another dtype, or no C compiler), large inputs get PyTorch's
# embedding-bag kernel, the same row sum a little slower, and small ones a batched matrix
# product. `method="auto"` picks the fastest path for the device and size.

# %%
for dev in ["cpu", "cuda"]:  # what auto would pick there, whether or not this machine has one
    for size in [(2, 3, 5), (8, 64, 128), (48, 512, 1024)]:
        chosen = attnviz.fused.choose_method(dev, size, torch.float32)
        print(f"auto on {dev:<4} at {str(size):<16}: {chosen}")

# %%
fx, fw = bench.make_inputs((8, 16, 96), seed=3)
for dtype in [torch.float32, torch.float64]:  # the C kernel takes float32
    x_, w_ = fx.to(dtype), fw.to(dtype)
    fused_out = attnviz.weighted_sum(x_, w_, method="fused")
    same = torch.allclose(fused_out.double(), attnviz.reference(x_, w_), atol=1e-5)
    print(f"{dtype}: fused ran as {attnviz.fused.fused_path(x_, w_)!r}; matches float64: {same}")
    print(f"    why: {attnviz.fused.fused_reason(x_, w_)}")

# %% [markdown]
# ## Summary
#
# - Time with a warm-up, a `synchronize` before every clock reading, and many samples; report the
#   median and the spread, never one number.
# - The weighted sum is memory-bound: the floor is the machine's read limit, a plain read of the
#   same bytes, which no method can beat; data in cache is read faster than data from DRAM.
# - The one-liner writes and re-reads a (B, T, H) temporary; einsum, bmm and the fused kernel don't.
# - Small inputs measure fixed costs (launches), large ones bandwidth: where the GPU wins depends
#   on the size, so measure a sweep rather than one size.
