"""Lesson 03's checkers: intermediate_bytes and timer."""

import pytest

from attnviz import exercises as ex


def test_intermediate_bytes_right_answer_passes():
    result = ex.check_intermediate_bytes(lambda b, t, h, d: b * t * h * d.itemsize)
    assert result.passed, result.message


@pytest.mark.parametrize(
    ("fn", "key"),
    [
        (lambda b, t, h, d: b * t * h, "elements"),
        (lambda b, t, h, d: b * h * d.itemsize, "output_only"),
        (lambda b, t, h, d: 2 * b * t * h * d.itemsize, "counted_expand"),
        (lambda b, t, h, d: b * t * h * 4, "fixed_itemsize_4"),
        (lambda b, t, h, d: b * t * h * d.itemsize * 8, "bits"),
        (lambda b, t, h, d: float(b * t * h * d.itemsize), "not_int"),
    ],
)
def test_each_intermediate_bytes_mistake_is_named(fn, key):
    result = ex.check_intermediate_bytes(fn)
    assert result.mistake == key, result.message


def timer_right(op, repeats, clock, sync):
    op()  # warm-up
    sync()
    times = []
    for _ in range(repeats):
        start = clock()
        op()
        sync()
        times.append(clock() - start)
    return times


def timer_batched(op, repeats, clock, sync):
    op()
    sync()
    start = clock()
    for _ in range(repeats):
        op()
    sync()
    return [(clock() - start) / repeats] * repeats


def timer_no_sync(op, repeats, clock, sync):
    op()
    times = []
    for _ in range(repeats):
        start = clock()
        op()
        times.append(clock() - start)
    return times


def timer_no_warmup(op, repeats, clock, sync):
    return timer_right(lambda: None, 0, clock, sync) + [
        _timed_once(op, clock, sync) for _ in range(repeats)
    ]


def _timed_once(op, clock, sync):
    start = clock()
    op()
    sync()
    return clock() - start


def timer_warmup_unsynced(op, repeats, clock, sync):
    op()
    return [_timed_once(op, clock, sync) for _ in range(repeats)]


def timer_one_sample(op, repeats, clock, sync):
    op()
    sync()
    return [_timed_once(op, clock, sync)]


def timer_own_clock(op, repeats, clock, sync):
    import time

    op()
    sync()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        op()
        sync()
        times.append(time.perf_counter() - start)
    return times


@pytest.mark.parametrize("fn", [timer_right, timer_batched])
def test_right_timer_passes(fn):
    result = ex.check_timer(fn)
    assert result.passed, result.message


@pytest.mark.parametrize(
    ("fn", "key"),
    [
        (timer_no_sync, "no_sync"),
        (timer_no_warmup, "no_warmup"),
        (timer_warmup_unsynced, "warmup_not_synced"),
        (timer_one_sample, "one_sample"),
        (timer_own_clock, "own_clock"),
    ],
)
def test_each_timing_mistake_is_named(fn, key):
    result = ex.check_timer(fn)
    assert result.mistake == key, result.message
