"""Outputs of 32 MiB and more on 2 MiB pages (attnviz.large_outputs, and the operator's fresh_block
in csrc/weighted_rows_op.cpp): advised for huge pages and started on a 2 MiB line, alive as long as
their tensor and unmapped after it, and the kernel's sums in them right against float64, on both
ways fused calls the kernel. Linux's own view of the memory is read from /proc/self/smaps."""

import gc
import sys
from pathlib import Path

import pytest
import torch
from torch.testing import assert_close

import attnviz
from attnviz import large_outputs, native, native_op

linux_only = pytest.mark.skipif(not large_outputs.ADVISES, reason="MADV_HUGEPAGE is Linux's")
THP = Path("/sys/kernel/mm/transparent_hugepage/enabled")
# huge pages are given (not only advised) unless the machine says never
GIVES_HUGE_PAGES = THP.exists() and "[never]" not in THP.read_text()

# B, T, H all different, B * H just past 32 MiB of float32 (8,391,599 numbers of at least 8,388,608)
BIG = (8219, 3, 1021)


def mapping_of(address: int) -> dict[str, str] | None:
    """The fields of /proc/self/smaps for the mapping that holds ``address``, or None."""
    fields: dict[str, str] | None = None
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split()[0]
        if "-" in head and not head.endswith(":"):  # a mapping's first line: start-end perms ...
            if fields is not None:
                return fields
            start, end = (int(part, 16) for part in head.split("-"))
            fields = {} if start <= address < end else None
        elif fields is not None:
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    return fields


def advised(address: int) -> bool:
    fields = mapping_of(address)
    return fields is not None and "hg" in fields["VmFlags"].split()


def huge_kib(address: int) -> int:
    fields = mapping_of(address)
    return int(fields["AnonHugePages"].split()[0]) if fields else 0


def test_outputs_below_32_mib_are_plain_torch_tensors():
    rows = large_outputs.MIN_FLOATS // 1024 - 1
    out = large_outputs.empty_f32(rows, 1024)
    assert out.shape == (rows, 1024) and out.dtype == torch.float32 and out.is_contiguous()
    assert out.untyped_storage().resizable()  # from torch's allocator, as before


@linux_only
def test_a_large_output_is_advised_for_huge_pages_and_starts_on_a_2_mib_line():
    out = large_outputs.empty_f32(8192, 1024)  # 32 MiB exactly
    assert out.shape == (8192, 1024) and out.dtype == torch.float32 and out.is_contiguous()
    assert out.data_ptr() % large_outputs.HUGE_PAGE == 0
    assert advised(out.data_ptr())
    if GIVES_HUGE_PAGES:  # already paged in, by the thread that made it, on 2 MiB pages
        assert huge_kib(out.data_ptr()) >= 32 << 10


@linux_only
def test_a_large_output_lives_as_long_as_its_tensor_and_is_unmapped_after():
    first = large_outputs.empty_f32(8192, 1024)
    first.fill_(1.0)
    view = first[100:200]  # a view keeps the mapping as the tensor does
    address = first.data_ptr()
    del first
    gc.collect()
    second = large_outputs.empty_f32(8192, 1024)  # its own memory, not the first's
    second.fill_(2.0)
    assert view.data_ptr() - 100 * 1024 * 4 == address != second.data_ptr()
    assert bool((view == 1.0).all()) and float(second.sum()) == 2.0 * 8192 * 1024
    del view
    gc.collect()
    assert not advised(address)  # the first mapping is gone
    assert advised(second.data_ptr())


def _inputs(b, t, h, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(b, t, h, generator=g), torch.rand(b, t, generator=g)


def _reference_check(got, x, w):
    assert got.shape == (x.shape[0], x.shape[2]) and got.dtype == torch.float32
    assert_close(got, attnviz.reference(x, w).float(), rtol=1e-5, atol=1e-4)


@pytest.mark.skipif(not native.available(), reason="no C kernel here")
@pytest.mark.parametrize("threads", [1, 2])
def test_the_kernel_sums_into_a_large_output_through_ctypes(threads):
    x, w = _inputs(*BIG, seed=threads)
    before = torch.get_num_threads()
    try:
        got = native.weighted_rows(x, w, threads=threads)
    finally:
        torch.set_num_threads(before)
    if large_outputs.ADVISES:
        assert advised(got.data_ptr())
    _reference_check(got, x, w)


@pytest.mark.skipif(
    not native.available() or native_op.find_compiler() is None,
    reason="no C kernel or no C++ compiler here",
)
@pytest.mark.parametrize("threads", [1, 2])
def test_the_operator_sums_into_a_large_output_made_by_its_own_allocator(threads):
    built = native_op.build(timeout=600)
    assert built.ok, built.detail
    x, w = _inputs(*BIG, seed=10 + threads)
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        native_op.learn(x, threads)
        got = torch.ops.attnviz.weighted_rows.default(x, w)
    finally:
        torch.set_num_threads(before)
    assert got is not None
    if sys.platform.startswith("linux"):
        assert advised(got.data_ptr()) and got.data_ptr() % large_outputs.HUGE_PAGE == 64
    _reference_check(got, x, w)
