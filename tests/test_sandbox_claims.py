"""What the README, the sandbox's docstrings and the expression box's help say the sandbox runs
is what its registry runs: every method and function they name is callable, every "use X
instead" names something that exists (and is not itself supported), and the einsum claim ("any
number of operands") holds."""

import importlib
import pkgutil
import re
from pathlib import Path

import pytest
import torch
from sandbox_inputs import variables

import attnviz.sandbox
from attnviz.sandbox import ATTRIBUTES, FUNCTIONS, METHODS, evaluate
from attnviz.sandbox.language import INSTEAD

ROOT = Path(__file__).resolve().parents[1]


def _readme_paragraph() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index("Type-your-own expressions go through")
    return text[start : text.index("\n\n", start)]


def _help() -> str:
    source = (ROOT / "attnviz" / "ui" / "expression.py").read_text()
    block = source[source.index("HELP = (") : source.index(")  # what the box runs")]
    return "".join(re.findall(r'"([^"]*)"', block))


def _docstrings() -> dict[str, str]:
    out = {"attnviz.sandbox": attnviz.sandbox.__doc__ or ""}
    for info in pkgutil.iter_modules(attnviz.sandbox.__path__):
        name = f"attnviz.sandbox.{info.name}"
        out[name] = importlib.import_module(name).__doc__ or ""
    return out


TEXTS = {"README": _readme_paragraph(), "the box's help": _help(), **_docstrings()}


def _called(text: str) -> tuple[set[str], set[str]]:
    """(methods written x.name( or .name( or .name/, functions written torch.name( or torch.name/)."""
    methods, functions = set(), set()
    for m in re.finditer(r"([\w.\]]*)\.(\w+)(?=[(/])", text):
        prefix, name = m.group(1), m.group(2)
        if prefix.endswith("torch"):
            functions.add(name)
        elif prefix in ("", "x", "net_output", "att_scores") or prefix.endswith("]"):
            methods.add(name)
    return methods, functions


@pytest.mark.parametrize("where", sorted(TEXTS))
def test_every_method_and_function_a_text_names_is_in_the_registry(where):
    methods, functions = _called(TEXTS[where])
    assert methods <= set(METHODS) | set(ATTRIBUTES), (where, methods - set(METHODS))
    callable_as_torch = set(FUNCTIONS) | {n for n, m in METHODS.items() if m.functional}
    assert functions <= callable_as_torch, (where, functions - callable_as_torch)


def test_the_texts_name_something_so_the_check_above_can_fail():
    methods, functions = _called(TEXTS["README"] + TEXTS["the box's help"])
    assert {"sum", "size", "view", "repeat"} <= methods and {"einsum", "bmm", "sum"} <= functions


CLAIMS_ANY_NUMBER = [
    w for w, t in TEXTS.items() if re.search(r"any number of\s+operands", t, re.IGNORECASE)
]


def test_the_einsum_claim_is_made_where_it_is_tested():
    assert {"README", "the box's help", "attnviz.sandbox.einsum"} <= set(CLAIMS_ANY_NUMBER)


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
def test_einsum_takes_any_number_of_operands_as_the_texts_say(n):
    vs = variables()
    x, w = vs["net_output"], vs["att_scores"]
    letters = ",".join(["bth"] + ["bt"] * (n - 1))
    args = ", ".join(["net_output"] + ["att_scores"] * (n - 1))
    got = evaluate(f'torch.einsum("{letters}->bh", {args})', vs).result
    torch.testing.assert_close(got, torch.einsum(f"{letters}->bh", x, *[w] * (n - 1)))


@pytest.mark.parametrize("name", sorted(INSTEAD))
def test_every_use_instead_hint_names_what_runs_and_is_not_itself_supported(name):
    assert name not in METHODS and name not in FUNCTIONS, f".{name} runs: drop its hint"
    for method in re.findall(r"\.(\w+)\(", INSTEAD[name]):
        assert method in METHODS, (name, INSTEAD[name])
