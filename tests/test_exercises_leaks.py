"""No path from a student's function to a right answer: nothing the checker hands it, no frame or
object it can find, no answer key it can call, and no watcher it can switch off lets an answer it
did not compute pass. Each cheat below passed before the checkers closed its path."""

from __future__ import annotations

import contextlib
import gc
import inspect
import sys
import types
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch

import attnviz
import attnviz.exercises.lesson01 as lesson01
import attnviz.exercises.lesson02 as lesson02
import attnviz.exercises.lesson03 as lesson03
import attnviz.exercises.lesson04 as lesson04
from attnviz import exercises as ex
from attnviz import tolerance
from attnviz.exercises import answer_key
from attnviz.exercises.outcome import Case

CHECKER_MODULES = (lesson01, lesson02, lesson03, lesson04)


def right(net_output, att_scores):
    return (net_output * att_scores[..., None]).sum(dim=1)  # (B,T,H) * (B,T,1) -> (B,H)


# --------------------------------------------------------------------------------------------
# Every case's answer is marked, and every marked function is refused


def cases_of(checker, monkeypatch) -> list[Case]:
    """The cases checker builds, captured instead of run."""
    seen: list[Case] = []
    module = sys.modules[checker.__module__]
    monkeypatch.setattr(module, "run", lambda exercise, fn, cases: seen.extend(cases))
    checker(lambda *args: None, seed=3)
    monkeypatch.undo()
    return seen


def marked_references() -> dict[str, object]:
    """{module.name: function} for every function the checker modules mark as an answer."""
    found = {}
    for module in CHECKER_MODULES:
        for name, value in vars(module).items():
            if isinstance(value, types.FunctionType) and answer_key.is_reference(value):
                found[f"{module.__name__}.{name}"] = value
    return found


@pytest.mark.parametrize("name", sorted(ex.CHECKERS))
def test_every_case_computes_its_answer_with_a_marked_reference_after_the_call(name, monkeypatch):
    cases = cases_of(ex.CHECKERS[name], monkeypatch)
    assert cases
    for case in cases:
        if name == "timer":  # the answer is what the clock measures (see the timer tests)
            assert case.answer is None
            continue
        assert answer_key.is_reference(case.answer), (name, case.label, case.answer)
        assert case.expected is None, (name, case.label)  # nothing to find before the call


def test_the_marked_references_are_exactly_the_cases_answers(monkeypatch):
    used = {
        case.answer
        for checker in ex.CHECKERS.values()
        for case in cases_of(checker, monkeypatch)
        if case.answer is not None
    }
    assert set(marked_references().values()) == used


def _calls(reference):
    """A student's weighted sum that also calls reference, with as many arguments as it takes
    (too many would fail before the call begins): what it computes, or how it fails, is beside
    the point, the call is what counts."""
    n = len(inspect.signature(reference).parameters)

    def sneaky(net_output, att_scores):
        with contextlib.suppress(Exception):
            reference(*(net_output, att_scores, net_output.shape[-1], torch.float32)[:n])
        return right(net_output, att_scores)

    return sneaky


@pytest.mark.parametrize("name", sorted(marked_references()))
def test_calling_any_checker_reference_is_refused_kindly(name):
    reference = marked_references()[name]
    result = ex.check_weighted_sum(_calls(reference), seed=0)
    assert not result.passed
    assert result.mistake == "answer_key", result.message
    assert f"your function calls `{name}`" in result.message
    assert "answer key" in result.message and "Write your own" in result.message


def test_a_new_function_made_from_a_reference_code_is_refused():
    copy = types.FunctionType(lesson02._ws.__code__, {})
    result = ex.check_weighted_sum(lambda x, w: copy(x, w), seed=0)
    assert result.mistake == "answer_key", result.message


def test_the_answer_key_list_holds_names_not_functions():
    assert answer_key._REFERENCES
    for entry in answer_key._REFERENCES:
        assert all(isinstance(part, str | int) for part in entry)


# --------------------------------------------------------------------------------------------
# Nothing to find while the student's function runs


def from_the_callers_frame(net_output, att_scores):
    frame = inspect.currentframe().f_back
    while frame is not None:
        case = frame.f_locals.get("case")
        if isinstance(case, Case):
            if isinstance(case.expected, torch.Tensor):
                return case.expected
            return case.answer(net_output, att_scores)
        frame = frame.f_back
    return None


def from_the_garbage_collector(net_output, att_scores):
    for holder in gc.get_referrers(net_output):
        for case in gc.get_referrers(holder):
            if isinstance(case, Case) and isinstance(case.expected, torch.Tensor):
                return case.expected
    for obj in gc.get_objects():
        found = isinstance(obj, Case) and obj.args and obj.args[0] is net_output
        if found and isinstance(obj.expected, torch.Tensor):
            return obj.expected
    return None


@pytest.mark.parametrize("cheat", [from_the_callers_frame, from_the_garbage_collector])
def test_an_answer_found_by_looking_around_does_not_pass(cheat):
    result = ex.check_weighted_sum(cheat, seed=0)
    assert not result.passed, result.message
    assert "expected" not in result.message.lower()


# --------------------------------------------------------------------------------------------
# The watcher: nothing to read through it, and switching it off never passes


def test_the_profiler_a_student_fetches_holds_nothing():
    fetched = []

    def looks(net_output, att_scores):
        fetched.append(sys.getprofile())
        return right(net_output, att_scores)

    assert ex.check_weighted_sum(looks, seed=0).passed  # looking is not wrong
    profiler = fetched[0]
    assert profiler is not None
    assert not hasattr(profiler, "__self__")
    assert getattr(profiler, "__closure__", None) is None
    assert getattr(profiler, "__defaults__", None) is None
    assert vars(profiler) == {}
    assert [a for a in dir(profiler) if not a.startswith("__")] == []


def switched_off(net_output, att_scores):
    sys.setprofile(None)
    return attnviz.weighted_sum(net_output, att_scores)


def off_and_on_again(net_output, att_scores):
    watcher = sys.getprofile()
    sys.setprofile(None)
    out = attnviz.weighted_sum(net_output, att_scores)
    sys.setprofile(watcher)
    return out


def replaced(net_output, att_scores):
    sys.setprofile(lambda *a: None)
    return lesson02._ws(net_output, att_scores)


def in_a_thread(net_output, att_scores):
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(attnviz.weighted_sum, net_output, att_scores).result()


@pytest.mark.parametrize("cheat", [switched_off, off_and_on_again, replaced, in_a_thread])
def test_an_answer_key_called_out_of_the_watchers_sight_does_not_pass(cheat):
    before = sys.getprofile()
    result = ex.check_weighted_sum(cheat, seed=0)
    assert sys.getprofile() is before
    assert not result.passed
    assert result.mistake in ("watch_off", "answer_key"), result.message
    if result.mistake == "watch_off":
        assert "cannot vouch for the result" in result.message
        assert result.cases_passed == 0


def _patched(owner, name, value):
    def patches(net_output, att_scores):
        setattr(owner, name, value)
        return torch.zeros(net_output.shape[0], net_output.shape[2], dtype=net_output.dtype)

    return patches


@pytest.mark.parametrize(
    ("owner", "name", "value", "said"),
    [
        (tolerance, "close", lambda *a, **k: True, "attnviz.tolerance.close"),
        (tolerance, "mismatch", lambda a, b: torch.zeros(a.shape, dtype=bool), "mismatch"),
        (torch.Tensor, "sum", lambda self, *a, **k: torch.zeros(1), "torch.Tensor.sum"),
    ],
)
def test_changing_torch_or_the_checker_never_passes(owner, name, value, said):
    had = name in vars(owner)
    old = vars(owner).get(name)
    try:
        result = ex.check_weighted_sum(_patched(owner, name, value), seed=0)
    finally:
        if had:
            setattr(owner, name, old)
        else:
            delattr(owner, name)
    assert not result.passed
    assert result.mistake == "watch_off", result.message
    assert said in result.message and "cannot vouch" in result.message


# --------------------------------------------------------------------------------------------
# The timer: plain functions, and what it returns must be measured


def grab(fn):
    """The arguments check_timer hands a timer, and the result."""
    given = []

    def timer(op, repeats, clock, sync):
        given.append((op, clock, sync))
        return fn(op, repeats, clock, sync)

    return given, ex.check_timer(timer, seed=0)


def honest(op, repeats, clock, sync):
    op()
    sync()
    times = []
    for _ in range(repeats):
        start = clock()
        op()
        sync()
        times.append(clock() - start)
    return times


def test_the_timer_gets_plain_functions_not_the_device():
    given, result = grab(honest)
    assert result.passed, result.message
    for control in given[0]:
        assert not hasattr(control, "__self__")
        assert "VirtualGPU" not in repr(control)


def _device_of(op):
    """The pretend GPU behind op, however it is reachable."""
    owner = getattr(op, "__self__", None)
    if owner is not None:
        return owner
    for cell in op.__closure__ or ():
        if hasattr(cell.cell_contents, "warm"):
            return cell.cell_contents
    return None


def reads_the_device(op, repeats, clock, sync):
    clock(), clock()
    return [_device_of(op).warm] * repeats


def reads_the_case(op, repeats, clock, sync):
    clock(), clock()
    frame = inspect.currentframe().f_back
    while "case" not in frame.f_locals:
        frame = frame.f_back
    return [frame.f_locals["case"].expected] * repeats


@pytest.mark.parametrize("cheat", [reads_the_device, reads_the_case])
def test_a_timer_that_reads_the_cost_instead_of_measuring_it_does_not_pass(cheat):
    result = ex.check_timer(cheat, seed=0)
    assert not result.passed
    assert result.mistake == "not_measured", result.message
    assert "readings of `clock`" in result.message
