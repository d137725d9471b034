"""Soak the sandbox with random expressions from its grammar (valid, invalid and hostile mixtures).

    .venv/bin/python scripts/fuzz_sandbox.py --n 100000 --seed 0

Every evaluation must either return a Trace or raise SandboxError with a message; anything else
(another exception, a SandboxError of kind "internal", a changed input tensor) is counted as
unexpected and printed. Reports the count, the outcome kinds, the slowest evaluation with its
expression, and the rate. Not part of the default test run: it takes a minute or two.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from attnviz.sandbox import ERROR_KINDS, METHODS, SandboxError, Trace, evaluate  # noqa: E402

VARIABLES = ("net_output", "att_scores", "mask_f", "lengths", "mask")
ATTRS = ("T", "shape", "ndim")
HOSTILE_ATTRS = (
    "__class__", "__dict__", "__globals__", "__subclasses__", "__init__", "__iadd__", "_base",
    "numpy", "tofile", "data", "grad", "untyped_storage", "storage", "from_file", "register_hook",
    "to", "cuda", "cpu", "backward", "add_", "mul_", "copy_", "zero_", "fill_", "requires_grad_",
    "apply_", "set_", "tolist", "item", "repeat", "new_empty", "resize_", "share_memory_",
    "format", "join", "count", "index", "real", "mT", "H", "device", "dtype",
)  # fmt: skip
HOSTILE_SNIPPETS = (
    "lambda: 0", "[v for v in net_output]", "{1: 2}", "{1}", "(y := net_output)",
    "f'{net_output}'", "'{0.__class__}'.format(net_output)", "__import__('os')", "open('x', 'w')",
    "eval('1')", "exec('1')", "getattr(net_output, 'numpy')", "globals()", "torch", "np", "print",
    "net_output if 1 else 0", "net_output < 1", "not net_output", "~net_output", "net_output // 2",
    "net_output % 2", "net_output & 1", "*net_output", "b'x'", "1j", "...", "None", "True",
    "'abc'", "net_output.numpy().tofile('canary')", "net_output.untyped_storage().from_file('x')",
    "net_output.register_hook(print)", "net_output.sum(out=net_output)", "net_output.to('cuda')",
    "net_output.__iadd__(1)", "net_output.add_(1)", "1e999", "10**10**10", "9" * 30,
    "net_output.expand(10**6, 10**6)", "net_output.reshape(10**5, 10**5)", "net_output[None]" * 5,
    "att_scores.repeat(1000, 1000)", "nеt_output", "ｎet_output", "net_output\0", "\u200bx",
    "net_output.sum(dim=1, dim=2)", "net_output.sum(axis=1, dim=1)", "net_output.size()",
    "1" * 1999, "(" * 300 + "net_output" + ")" * 300, "-" * 500 + "net_output",
)  # fmt: skip
EQUATIONS = (
    "bth,bt->bh", "bth,bt->bth", "bt,bth->bh", "bth->bh", "bt->b", "ij,jk->ik", "...h,...->...h",
    "bth,bt", "ii->i", "i,j->ij", "bth,bs->bh", "bth,bt->bq", "bth,bt->bhh", "b..t,bt->b", "->",
    "a", "", "bth,,bt->bh", "bth,bt-bh", "bth;bt->bh", "BTH,BT->BH", "bth,bt->bh->b", "ab,cd,ef,gh->",
    "abcdefgh,abcdefgh->", "i" * 40,
)  # fmt: skip
# Ellipsis equations with one, two and three operands (issue 11: the ... axes of every operand
# broadcast together, as torch.broadcast_shapes does).
ELLIPSIS_EQUATIONS = (
    "...->...", "...->", "...", "...h->...", "b...->b", "...ij->...ji", "i...->...i", "...ii->...i",
    "...,...->...", "b...,b...->b...", "...h,...->...h", "bt...,bt->b...", "...t,...th->...h",
    "i...,...->i", "...,...->", "...a,...b->...ab", "...j,j...->...",
    "...,...,...->...", "b...,b...,b...->b", "...h,...,...->...h", "i...,...j,k...->ijk",
    "...,...,...", "...a,a...,...->...", "bth,bt,...->bh...",
)  # fmt: skip
HOSTILE_SNIPPETS = HOSTILE_SNIPPETS + (
    "torch.ones(3)", "torch.__dict__", "torch.load('canary')", "torch.nn.functional.relu(net_output)",
    "torch", "torch.pi", "torch.view(net_output, -1)", "torch.einsum(net_output)",
)  # fmt: skip
MUTATION_CHARS = "()[]{}.,:;+-*/@%<>=!~^&|'\"\\ \n\t0123456789_aTxé\0\u0430\uff41\u200b"


class Grammar:
    """Random expressions over the sandbox language, with a share of mistakes and attacks."""

    def __init__(self, rng: random.Random, hostile: float = 0.1) -> None:
        self.rng = rng
        self.hostile = hostile

    def number(self) -> str:
        r = self.rng.random()
        if r < 0.6:
            return str(self.rng.randint(-3, 4))
        if r < 0.8:
            return f"{self.rng.uniform(-3, 3):.2f}"
        if r < 0.9:
            return self.rng.choice(["0", "1", "-1", "2", "0.5", "1e-3"])
        return self.rng.choice(["10**9", "999999999", "1e9", "1e10", "2**62", "10**6", "100000"])

    def index_item(self) -> str:
        r = self.rng.random()
        if r < 0.3:
            return str(self.rng.randint(-4, 4))
        if r < 0.55:
            lo = self.rng.choice(["", "0", "1", "-1", "2"])
            hi = self.rng.choice(["", "1", "2", "-1", "5", "100000"])
            step = self.rng.choice(["", "", ":1", ":2", ":-1", ":0"])
            return f"{lo}:{hi}{step}"
        if r < 0.8:
            return "None"
        if r < 0.95:
            return "..."
        return self.rng.choice(["net_output", "1.5", "True", "[0, 1]", "(0, 1)", "'a'"])

    def index(self) -> str:
        k = self.rng.choice([1, 1, 2, 2, 3, 4])
        return ", ".join(self.index_item() for _ in range(k))

    def dims(self) -> str:
        r = self.rng.random()
        if r < 0.7:
            return str(self.rng.randint(-3, 3))
        if r < 0.9:
            return "(" + ", ".join(str(self.rng.randint(-3, 3)) for _ in range(2)) + ")"
        return self.rng.choice(["None", "()", "1.0", "True", "'x'", "[0, 1]"])

    def shape_args(self, depth: int) -> str:
        r = self.rng.random()
        k = self.rng.randint(1, 4)
        sizes = [
            self.rng.choice(["-1", "1", "2", "3", "5", "6", "15", "30", "0", "-2"])
            for _ in range(k)
        ]
        if r < 0.5:
            return ", ".join(sizes)
        if r < 0.75:
            return "(" + ", ".join(sizes) + ",)"
        if r < 0.85:
            return f"{self.expr(depth + 1)}.shape"
        return self.rng.choice(["[2, 15]", "10**6, 10**6", "2**40", "x.shape + (1,)", "()"])

    def method(self, depth: int) -> str:
        name = self.rng.choice(list(METHODS))
        recv = self.atom(depth + 1)
        r = self.rng.random
        if name in ("sum", "mean", "amax"):
            parts = []
            if r() < 0.7:
                key = self.rng.choice(["", "dim=", "axis="])
                parts.append(key + self.dims())
            if r() < 0.3:
                parts.append("keepdim=" + self.rng.choice(["True", "False", "1"]))
            args = ", ".join(parts)
        elif name in ("softmax", "cumsum"):
            args = self.rng.choice(["", "dim=", "axis="]) + self.dims() if r() < 0.9 else ""
        elif name in ("unsqueeze", "squeeze"):
            args = self.dims() if r() < 0.8 else ""
        elif name == "transpose":
            args = f"{self.rng.randint(-3, 3)}, {self.rng.randint(-3, 3)}"
        elif name == "permute":
            order = list(range(self.rng.randint(0, 4)))
            self.rng.shuffle(order)
            args = ", ".join(map(str, order)) if r() < 0.6 else str(order)
        elif name in ("reshape", "view", "expand"):
            args = self.shape_args(depth)
        elif name == "flatten":
            args = ", ".join(str(self.rng.randint(-3, 3)) for _ in range(self.rng.randint(0, 2)))
        elif name == "matmul":
            args = self.expr(depth + 1)
        else:
            args = "" if r() < 0.9 else "1"
        if r() < 0.05:
            args += (", " if args else "") + self.rng.choice(
                ["out=net_output", "dtype=None", "inplace=True", "**{}", "*[1]"]
            )
        if METHODS[name].functional and r() < 0.25:  # the functional form, torch.sum(x, ...)
            return f"torch.{name}({recv}{', ' if args else ''}{args})"
        return f"{recv}.{name}({args})"

    def atom(self, depth: int) -> str:
        if depth > 6:
            return self.rng.choice(VARIABLES) if self.rng.random() < 0.85 else self.number()
        r = self.rng.random()
        if r < 0.3:
            return self.rng.choice(VARIABLES)
        if r < 0.45:
            return f"{self.atom(depth + 1)}[{self.index()}]"
        if r < 0.55:
            attr = self.rng.choice(ATTRS)
            if attr == "shape" and self.rng.random() < 0.5:
                return f"{self.atom(depth + 1)}.shape[{self.index_item()}]"
            return f"{self.atom(depth + 1)}.{attr}"
        if r < 0.8:
            return self.method(depth)
        if r < 0.88:
            eq = self.rng.choice(EQUATIONS + ELLIPSIS_EQUATIONS * 2)
            terms = eq.split("->")[0].count(",") + 1
            k = terms if self.rng.random() < 0.8 else self.rng.choice([1, 2, 3])
            simple = self.rng.random() < 0.5  # plain variables: more equations get to run
            ops = ", ".join(
                self.rng.choice(VARIABLES[:4]) if simple else self.expr(depth + 1) for _ in range(k)
            )
            fn = self.rng.choice(["einsum", "torch.einsum"])
            if self.rng.random() < 0.1:
                return f"{self.rng.choice(['bmm', 'torch.bmm'])}({ops})"
            return f'{fn}("{eq}", {ops})'
        if r < 0.95:
            return f"({self.expr(depth + 1)})"
        return self.number()

    def expr(self, depth: int = 0) -> str:
        if self.rng.random() < self.hostile / 4:
            return self.rng.choice(HOSTILE_SNIPPETS)
        if self.rng.random() < self.hostile / 4:
            attr = self.rng.choice(HOSTILE_ATTRS)
            tail = "()" if self.rng.random() < 0.5 else ""
            return f"{self.atom(depth + 1)}.{attr}{tail}"
        r = self.rng.random()
        if depth > 6 or r < 0.45:
            return self.atom(depth)
        if r < 0.85:
            op = self.rng.choice(["+", "-", "*", "*", "/", "@", "**"])
            right = (
                self.number() if op == "**" and self.rng.random() < 0.8 else self.expr(depth + 1)
            )
            return f"{self.expr(depth + 1)} {op} {right}"
        return f"-{self.atom(depth + 1)}"

    def mutate(self, text: str) -> str:
        """Break the text a little: cut, insert or repeat a piece, add odd characters."""
        r = self.rng.random()
        if not text:
            return text
        i = self.rng.randrange(len(text))
        if r < 0.3:
            return text[:i]
        if r < 0.6:
            return text[:i] + self.rng.choice(MUTATION_CHARS) + text[i:]
        if r < 0.8:
            j = self.rng.randrange(i, len(text) + 1)
            return text[:i] + text[i:j] * self.rng.randint(2, 4) + text[j:]
        if r < 0.9:
            return "(" * self.rng.randint(1, 60) + text + ")" * self.rng.randint(0, 60)
        return "-" * self.rng.randint(1, 200) + text

    def sample(self) -> str:
        text = self.expr()
        if self.rng.random() < 0.15:
            text = self.mutate(text)
        return text


def make_variables(rng: random.Random) -> dict[str, torch.Tensor]:
    b, t, h = rng.randint(1, 4), rng.randint(1, 5), rng.randint(1, 6)
    if rng.random() < 0.2:
        h = t  # the T == H trap
    g = torch.Generator().manual_seed(rng.randrange(2**31))
    return {
        "net_output": torch.rand(b, t, h, generator=g),  # (B,T,H)
        "att_scores": torch.rand(b, t, generator=g).softmax(dim=1),  # (B,T)
        "mask_f": (torch.rand(b, t, generator=g) > 0.3).float(),  # (B,T)
        "lengths": torch.randint(1, t + 1, (b,), generator=g),  # (B,) int64
        "mask": torch.rand(b, t, generator=g) > 0.3,  # (B,T) bool
    }


def check_trace(text: str, trace: Trace) -> str:
    """What is wrong with a successful trace, or ''."""
    for step in trace.steps:
        start, end = step.span
        if not 0 <= start <= end <= len(text) or text[start:end] != step.source:
            return f"step {step.index} has span {step.span} but source {step.source!r}"
        if isinstance(step.value, torch.Tensor) and tuple(step.value.shape) != step.shape:
            return f"step {step.index} says shape {step.shape} but holds {step.value.shape}"
    if trace.expr != text:
        return "trace.expr differs from the text"
    return ""


def check_error(text: str, exc: SandboxError) -> str:
    """What is wrong with a refusal, or ''."""
    if exc.kind == "internal" or exc.kind not in ERROR_KINDS:
        return f"SandboxError({exc.kind}): {exc} <- {exc.__cause__!r}"
    if not str(exc).strip():
        return "empty message"
    if exc.span is not None and not 0 <= exc.span[0] <= exc.span[1] <= len(text):
        return f"span {exc.span} outside the text"
    if isinstance(text, str) and exc.trace.expr != text:
        return "error trace.expr differs from the text"
    return ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="expressions to evaluate")
    parser.add_argument("--seed", type=int, default=0, help="random seed")
    parser.add_argument("--hostile", type=float, default=0.1, help="share of hostile pieces")
    parser.add_argument("--show", type=int, default=5, help="unexpected cases to print")
    args = parser.parse_args(argv)

    rng = random.Random(args.seed)
    grammar = Grammar(rng, hostile=args.hostile)
    outcomes: Counter[str] = Counter()
    ellipsis: Counter[str] = Counter()  # outcomes of expressions holding an ellipsis equation
    unexpected: list[tuple[str, str]] = []
    slowest = (0.0, "")
    times: list[float] = []
    variables = make_variables(rng)
    originals = {k: v.clone() for k, v in variables.items()}
    evaluate("net_output", variables)  # PyTorch's one-time start-up is not an evaluation
    started = time.perf_counter()
    for i in range(args.n):
        if i % 500 == 0:
            for name, value in variables.items():
                if not torch.equal(value, originals[name]):
                    unexpected.append(("<inputs>", f"{name} was modified"))
            variables = make_variables(rng)
            originals = {k: v.clone() for k, v in variables.items()}
        text = grammar.sample()
        t0 = time.perf_counter()
        try:
            trace = evaluate(text, variables)
            outcome = "ok"
            problem = check_trace(text, trace)
            if problem:
                unexpected.append((text, problem))
        except SandboxError as exc:
            outcome = exc.kind
            problem = check_error(text, exc)
            if problem:
                unexpected.append((text, problem))
        except Exception as exc:  # exactly what this script hunts for
            outcome = "unexpected"
            unexpected.append((text, f"{type(exc).__name__}: {exc}"))
        elapsed = time.perf_counter() - t0
        times.append(elapsed)
        outcomes[outcome] += 1
        if "einsum(" in text and any(f'"{eq}"' in text for eq in ELLIPSIS_EQUATIONS):
            ellipsis[outcome] += 1
        if elapsed > slowest[0]:
            slowest = (elapsed, text)
    for name, value in variables.items():
        if not torch.equal(value, originals[name]):
            unexpected.append(("<inputs>", f"{name} was modified"))
    total = time.perf_counter() - started

    print(f"expressions: {args.n:,} (seed {args.seed}, hostile share {args.hostile})")
    print("outcomes:", ", ".join(f"{k} {v:,}" for k, v in outcomes.most_common()))
    print("with an ellipsis einsum:", ", ".join(f"{k} {v:,}" for k, v in ellipsis.most_common()))
    print(f"unexpected: {len(unexpected)}")
    for text, what in unexpected[: args.show]:
        print(f"  {text!r}: {what}")
    times.sort()
    pct = {p: times[min(len(times) - 1, int(p / 100 * len(times)))] * 1e3 for p in (50, 99, 99.9)}
    print(
        f"latency: median {pct[50]:.2f} ms, p99 {pct[99]:.2f} ms, p99.9 {pct[99.9]:.2f} ms, "
        f"max {slowest[0] * 1e3:.1f} ms"
    )
    print(f"slowest: {slowest[0] * 1e3:.1f} ms for {slowest[1]!r}")
    print(f"total: {total:.1f} s, rate: {args.n / total:,.0f} expressions/s")
    return 1 if unexpected else 0


if __name__ == "__main__":
    sys.exit(main())
