"""The expression sandbox against attacks: a table of hostile and pathological inputs refused or
answered with nothing else escaping, nothing on disk changed and the caller's tensors kept; and
memory counted in distinct storages, so a trace never holds a large one.
"""

import os
import pickle
from pathlib import Path

import pytest
import torch
from sandbox_inputs import refusal, variables

from attnviz.sandbox import ErrorKind, Limits, SandboxError, Trace, evaluate

# --------------------------------------------------------------------------------------------
# Hostile and pathological inputs
# --------------------------------------------------------------------------------------------

HUGE = "net_output + " * 8000 + "net_output"  # about 100 kB
HOSTILE = [
    # (id, expression, expected kind or "ok", a fragment the message must contain)
    ("dunder", "net_output.__class__", "refused", "attribute `__class__` is not allowed"),
    ("dunder-chain", "net_output.__class__.__mro__[1].__subclasses__()", "refused", "__"),
    ("tuple-subclasses", "().__class__.__base__.__subclasses__()", "refused", "`__class__`"),
    ("dunder-name", "__builtins__", "refused", "`__builtins__`"),
    ("import", "__import__('os').system('touch pwned')", "refused", "__import__"),
    ("getattr", "getattr(net_output, 'numpy')", "refused", "getattr"),
    ("str-format", "'{0.__class__}'.format(net_output)", "refused", "string"),
    ("f-string", "f'{net_output.__class__}'", "refused", "f-string"),
    ("lambda", "(lambda: net_output)()", "refused", "lambda"),
    ("list-comp", "[t for t in net_output]", "refused", "list comprehension"),
    ("gen-exp", "sum(t for t in net_output)", "refused", "sum"),
    ("dict", "{'a': net_output}", "refused", "dict"),
    ("walrus", "(y := net_output)", "refused", "walrus"),
    ("open", "open('canary.txt', 'w')", "refused", "open"),
    ("eval", "eval('1 + 1')", "refused", "eval"),
    ("exec", "exec('import os')", "refused", "exec"),
    ("globals", "globals()", "refused", "globals"),
    ("torch-name", "torch.ones(10)", "refused", "torch.ones"),
    ("torch-bare", "torch", "name", "`torch`"),
    ("torch-attr", "torch.pi * net_output", "refused", "not supported here: `torch.pi`"),
    ("torch-dunder", "torch.__dict__", "refused", "`__dict__`"),
    ("torch-view-fn", "torch.view(net_output, -1)", "refused", "method"),
    ("torch-nested", "torch.nn.functional.softmax(att_scores, 1)", "refused", "`torch.nn`"),
    ("numpy-name", "np.fromfile('canary.txt')", "name", "`np`"),
    ("tofile", "net_output.numpy().tofile('pwned.bin')", "refused", "numpy"),
    ("numpy", "net_output.numpy()", "refused", "numpy"),
    (
        "storage-file",
        "net_output.untyped_storage().from_file('canary.txt', True, 10)",
        "refused",
        "untyped_storage",
    ),
    ("storage", "net_output.untyped_storage()", "refused", "untyped_storage"),
    ("in-place", "net_output.add_(1)", "refused", "in place"),
    ("iadd", "net_output.__iadd__(1)", "refused", "__iadd__"),
    ("setitem", "net_output.__setitem__(0, 1)", "refused", "__setitem__"),
    ("data", "net_output.data", "refused", "data"),
    ("out-kwarg", "net_output.sum(dim=1, out=att_scores)", "refused", "keyword `out`"),
    ("dtype-kwarg", "net_output.sum(dim=1, dtype=None)", "refused", "keyword `dtype`"),
    ("hook", "net_output.register_hook(print)", "refused", "register_hook"),
    ("grad", "net_output.grad", "refused", "grad"),
    ("to-cuda", "net_output.to('cuda')", "refused", "`to`"),
    ("cuda", "net_output.cuda()", "refused", "cuda"),
    ("cpu", "net_output.cpu()", "refused", "cpu"),
    ("method-unbound", "net_output.sum", "type", "must be called"),
    ("duplicate-kwarg", "net_output.sum(dim=1, dim=2)", "syntax", "given twice"),
    ("kwargs-unpack", "net_output.sum(**{'dim': 1})", "refused", "unpacking"),
    ("args-unpack", "net_output.sum(*net_output)", "refused", "unpacking of a tensor"),
    ("comparison", "net_output[net_output > 0]", "refused", "comparison"),
    ("list-index", "net_output[[0, 1]]", "refused", "list"),
    ("tensor-index", "net_output[att_scores]", "type", "index"),
    ("string-op", "'ab' * 10**8", "refused", "string"),
    ("bytes", "b'x'", "refused", "bytes"),
    ("complex", "net_output * 1j", "refused", "complex"),
    ("huge-power", "net_output ** 10**9", "limit", "exponent"),
    ("power-tower", "2 ** 2 ** 2 ** 2 ** 2", "limit", "exponent"),
    ("power-chain", "((((9 ** 8) ** 8) ** 8) ** 8)", "limit", "too large"),
    ("tensor-exponent", "net_output ** net_output", "type", "exponent"),
    ("repeat", "att_scores.repeat(1000, 1000)", "limit", "the limit is"),
    ("huge-expand", "att_scores[..., None].expand(2, 3, 1000000000)", "limit", "elements"),
    ("huge-expand-lead", "net_output.expand(1000000, 1000000, 2, 3, 5)", "limit", "elements"),
    (
        "huge-broadcast",
        "net_output.reshape(-1)[:, None, None, None, None] * net_output.reshape(-1)[:, None, None, None] * net_output.reshape(-1)[:, None, None] * net_output.reshape(-1)[:, None] * net_output.reshape(-1)",
        "limit",
        "elements",
    ),
    (
        "huge-matmul",
        "net_output[..., None, None].expand(2, 3, 5, 1000, 1) @ net_output[..., None, None].expand(2, 3, 5, 1, 1000)",
        "limit",
        "elements",
    ),
    (
        "huge-einsum",
        'einsum("i,j,k,l->", net_output.reshape(-1), net_output.reshape(-1), net_output.reshape(-1), net_output.reshape(-1)[None].expand(1000, 30).reshape(-1))',
        "limit",
        "",
    ),
    ("huge-reshape", "net_output.reshape(10**5, 10**5)", "shape", "elements"),
    ("merely-big", "net_output.reshape(-1)[:, None].expand(30, 30000).sum()", "ok", ""),
    ("huge-slice", "net_output[0:999999999:1, -999999999:]", "ok", ""),
    ("huge-index", "net_output[999999999]", "shape", "out of range"),
    ("huge-constant", "net_output * 1" + "0" * 40, "limit", "too large"),
    ("huge-int-literal", "1" * 2000, "limit", "too large"),
    ("inf-constant", "net_output * 1e999", "limit", "too large"),
    ("many-nones", "net_output" + "[None]" * 20, "limit", "axes"),
    ("deep-unary", "-" * 1000 + "net_output", "limit", "nested"),
    ("deep-parens", "(" * 500 + "net_output" + ")" * 500, "syntax", "not a valid expression"),
    ("deep-calls", "net_output" + ".abs()" * 60, "limit", "nested"),
    ("long-sum", " + ".join(["net_output"] * 150), "limit", ""),
    ("100kB", HUGE, "limit", "characters long"),
    ("nul", "net_output\0.sum()", "refused", "NUL"),
    ("cyrillic-a", "net_output * \u0430tt_scores[..., None]", "refused", "CYRILLIC"),
    ("fullwidth", "net_output * \uff41tt_scores[..., None]", "refused", "FULLWIDTH"),
    ("zero-width", "net_output * att_\u200bscores[..., None]", "refused", "ZERO WIDTH"),
    ("rtl-override", "net_output\u202e * att_scores", "refused", "RIGHT-TO-LEFT"),
    ("einsum-no-eq", "einsum(net_output, att_scores)", "refused", "equation"),
    (
        "einsum-bad-eq",
        "einsum('bth,bt->bh; import os', net_output, att_scores)",
        "value",
        "equation",
    ),
    (
        "einsum-kwargs",
        "einsum('bth,bt->bh', net_output, att_scores, out=net_output)",
        "refused",
        "keyword",
    ),
    ("tuple-repeat", "net_output.shape * 10**8", "type", "cannot be"),
    ("div-zero", "1 / 0", "value", "divides by zero"),
    ("empty", "   ", "syntax", "empty"),
    ("not-text", b"net_output", "type", "text"),
    ("breakpoint", "breakpoint()", "refused", "breakpoint"),
    ("yield", "(yield net_output)", "refused", "yield"),
    ("await", "await net_output", "refused", "await"),
    ("conditional", "net_output if net_output.ndim else att_scores", "refused", "conditional"),
    ("ellipsis-past-the-end", "net_output[..., 0, ..., 1]", "shape", "past the last axis"),
    ("negative-step", "net_output[::-1]", "value", "positive"),
]


@pytest.fixture
def jail(tmp_path, monkeypatch):
    """Run in an empty folder holding a canary file; yield a function that checks nothing moved."""
    canary = tmp_path / "canary.txt"
    canary.write_text("tweet\n")
    monkeypatch.chdir(tmp_path)
    before = sorted(os.listdir(tmp_path)), canary.read_bytes(), canary.stat().st_mtime_ns

    def unchanged() -> bool:
        now = sorted(os.listdir(tmp_path)), canary.read_bytes(), canary.stat().st_mtime_ns
        return now == before and Path.cwd() == tmp_path

    return unchanged


@pytest.mark.parametrize(
    ("expr", "kind", "fragment"), [case[1:] for case in HOSTILE], ids=[case[0] for case in HOSTILE]
)
def test_hostile_input_is_refused_or_answered_without_side_effects(jail, expr, kind, fragment):
    vs = variables((2, 3, 5))
    before = {k: v.clone() for k, v in vs.items()}
    try:
        trace = evaluate(expr, vs)
        outcome, message = "ok", ""
        assert isinstance(trace, Trace)
    except SandboxError as exc:  # any other exception fails the test by escaping
        outcome, message = exc.kind, str(exc)
    assert (outcome, fragment in message) == (kind, True), message
    if outcome != "ok":
        assert message.strip()
    for name, value in vs.items():
        assert torch.equal(value, before[name]), f"{name} changed"
    assert jail(), "the folder or the canary changed"


def test_hostile_table_has_at_least_forty_cases():
    assert len(HOSTILE) >= 40
    assert len({case[0] for case in HOSTILE}) == len(HOSTILE)


def test_nfkc_lookalike_never_reaches_a_variable():
    """Python folds fullwidth letters into ASCII in identifiers; the sandbox refuses them first."""
    err = refusal("\uff4eet_output")
    assert err.kind == "refused" and err.span == (0, 1)
    assert "'n'" in str(err)


# --------------------------------------------------------------------------------------------
# Memory: distinct storages counted in bytes; a trace never holds a large storage
# --------------------------------------------------------------------------------------------

ATTACK = "(net_output.view(-1)[:,None]*att_scores[:1,:1].expand(1,{n}))[:1,:1]" + ".T" * 28


def test_views_add_no_bytes():
    vs = variables((2, 3, 5), dtype=torch.float32)
    base = evaluate("net_output", vs).bytes_touched
    assert base == 2 * 3 * 5 * 4
    assert evaluate("net_output.T.T[:, :1][None].expand(4, 2, 3, 5)", vs).bytes_touched == base


def test_every_distinct_storage_is_counted_once():
    vs = variables((2, 3, 5), dtype=torch.float32)
    trace = evaluate("net_output * 2 + net_output", vs)
    assert trace.bytes_touched == 3 * (2 * 3 * 5 * 4)  # the variable, the product, the sum


def test_memory_attack_counts_the_large_storage_once():
    vs = variables((2, 3, 5), dtype=torch.float32)
    trace = evaluate(ATTACK.format(n=30_000), vs)
    product = 30 * 30_000 * 4
    assert product <= trace.bytes_touched < product + 4096


def test_memory_attack_trace_keeps_no_large_storage():
    vs = variables((2, 3, 5), dtype=torch.float32)
    trace = evaluate(ATTACK.format(n=30_000), vs)
    kept = [s.value for s in trace.steps if isinstance(s.value, torch.Tensor)]
    assert all(v.untyped_storage().nbytes() == v.numel() * v.element_size() for v in kept)
    assert len(pickle.dumps(trace)) < 64 * 1024  # the storage is 3.6 MB; 36 steps kept views


def test_byte_budget_refuses_before_allocation():
    vs = variables((2, 3, 5), dtype=torch.float32)
    err = refusal(ATTACK.format(n=30_000), vs, limits=Limits(max_bytes=1_000_000))
    assert err.kind is ErrorKind.LIMIT and "3,600,144 bytes" in str(err)  # product + both inputs
    # refused on the shape-only pass: the real pass stops before the product, never making it
    assert all(s.shape != (30, 30_000) for s in err.trace.steps)
