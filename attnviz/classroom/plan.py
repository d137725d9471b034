"""A class plan as a small TOML file a teacher writes: the slide order and the check-in questions.

    plan = parse_plan(text)                      # PlanError naming the field and line, if malformed
    qs = build_questions(plan, net_output, att_scores)   # the questions on this class's example

Each ``[[question]]`` names the slide it is asked ``before`` (the slide that answers it), its
``kind`` (choice, shape, number, expression), its ``prompt``, optional ``needs`` (the code the
question is about, shown with it), its right ``answer`` (not for expression questions: the
Playground's verdict judges those), ``why``, and optional ``[[question.wrong]]`` answers with
their explanation. Answers may be written in the
example's letters: a shape "(B, T, 1)", a number "B*T*H". A shape question may say ``mistakes = "result"`` (or ``"operand"``): every
wrong shape that a catalogued wrong form (``attnviz.forms``) computes on the example is then
explained by that form, found by running it.

Text may name the example's sizes in braces (``{B}``, ``{weighted}``, ...: ``PLACEHOLDERS``);
they are filled in by running the code on the class's example, never typed in. The file is parsed
strictly: at most ``MAX_PLAN_BYTES``, only the known keys, every value of its type and size.
The built-in five are ``questions/default.toml``.
"""

from __future__ import annotations

import base64
import binascii
import functools
import re
import tomllib
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from urllib.parse import parse_qsl, urlencode

import torch
from torch import Tensor

from attnviz import forms, trace
from attnviz.classroom.deck import Slide
from attnviz.classroom.question import Kind, Question, format_shape, parse_answer
from attnviz.errors import AttnvizError

MAX_PLAN_BYTES = 32_000
MAX_QUESTIONS = 40
MAX_CHOICES = 8
MAX_WRONG = 8
LIMITS = {"prompt": 600, "why": 1200, "needs": 300, "choice": 200, "answer": 200, "id": 40}
SLIDE_KEYS = (
    "net_output",
    "att_scores",
    "unsqueeze",
    "align",
    "expand",
    "product",
    "sum",
    "result",
    "cell",
    "trap",
    "grad",
    "view",
)
_ID = re.compile(r"[a-z][a-z0-9_]{0,39}")
_FIELD = re.compile(r"\{([A-Za-z_]+)\}")
_LETTER_SHAPE = re.compile(r"\(\s*([BTH0-9]{1,4}(?:\s*,\s*[BTH0-9]{1,4})*)\s*,?\s*\)")
_LETTER_NUMBER = re.compile(r"\s*(?:[BTH]|[0-9]{1,6})(?:\s*\*\s*(?:[BTH]|[0-9]{1,6}))*\s*")
_QUESTION_KEYS = {"id", "before", "kind", "prompt", "needs", "choices", "answer", "why"}
_QUESTION_KEYS |= {"wrong", "mistakes"}


class PlanError(AttnvizError):
    """A malformed plan file; the message names the field and the line."""


@dataclass(frozen=True)
class Wrong:
    """A wrong answer the teacher explains (as written: placeholders not yet filled)."""

    answer: str
    why: str


@dataclass(frozen=True)
class QuestionSpec:
    """One question as written in the file (placeholders not yet filled). line: its header's."""

    id: str
    before: str
    kind: Kind
    prompt: str
    why: str
    answer: str = ""
    needs: str = ""
    choices: tuple[str, ...] = ()
    wrong: tuple[Wrong, ...] = ()
    mistakes: str = ""
    line: int = 0


@dataclass(frozen=True)
class Plan:
    """A class plan: the slides in their order and the questions. text: the file it came from
    (what a saved plan downloads)."""

    slides: tuple[str, ...]
    questions: tuple[QuestionSpec, ...]
    text: str


# ---- the example's computed values -----------------------------------------------------------------


def placeholders(net_output: Tensor, att_scores: Tensor) -> dict[str, str]:
    """Every {name} a plan may use, computed on net_output (B, T, H), att_scores (B, T)."""
    x, w = net_output.detach(), att_scores.detach()
    b, t, h = (int(s) for s in x.shape)
    w3 = w[..., None]  # (B,T,1)
    prod = x * w3  # (B,T,H)
    weighted = forms.RIGHT.runs[0](forms.Inputs.of_weights(x, w))  # (B,H)
    sq_x, sq_w = trace.square_variant(x, w) if t != h else (x, w)  # (B,T,T), (B,T)
    vc = trace.view_vs_copy(w, h)
    return {
        "B": str(b),
        "T": str(t),
        "H": str(h),
        "net_output": format_shape((b, t, h)),
        "att_scores": format_shape((b, t)),
        "unsqueezed": format_shape(tuple(w3.shape)),
        "product": format_shape(tuple(prod.shape)),
        "weighted": format_shape(tuple(weighted.shape)),
        "square_net_output": format_shape(tuple(sq_x.shape)),
        "square_att_scores": format_shape(tuple(sq_w.shape)),
        "trap_code": forms.FORMS[forms.TRAP].code,
        "trap_operand": format_shape(tuple(sq_w[:, None].shape)),
        "expand_code": vc.expand.code,
        "expand_strides": str(vc.expand.strides),
        "expand_new_bytes": str(vc.expand.new_bytes),
        "copy_numbers": str(vc.repeat.storage_numbers),
    }


PLACEHOLDERS = tuple(placeholders(torch.zeros(2, 3, 4), torch.zeros(2, 3)))


def fill(text: str, values: dict[str, str]) -> str:
    """text with each {name} replaced by its value (names are checked when the plan is parsed)."""
    return _FIELD.sub(lambda m: values[m[1]], text)


def letters_shape(text: str, values: dict[str, str]) -> str | None:
    """'(B, T, 1)' -> '(2, 3, 1)' on the example; None when text is not written in letters."""
    m = _LETTER_SHAPE.fullmatch(text.strip())
    if not m:
        return None
    parts = [p.strip() for p in m[1].split(",")]
    if not all(p in ("B", "T", "H") or p.isdigit() for p in parts):
        return None
    return format_shape(tuple(int(values.get(p, p)) for p in parts))


def letters_number(text: str, values: dict[str, str]) -> str | None:
    """'T' -> '3', 'B*T*H' -> '24' on the example; None when text is not written in letters."""
    if not _LETTER_NUMBER.fullmatch(text.strip()):
        return None
    product = 1
    for p in text.split("*"):
        product *= int(values.get(p.strip(), p.strip()))
    return str(product)


# ---- parsing the file ------------------------------------------------------------------------------


class _Lines:
    """Where things are in the file's text, for messages: tomllib gives values, not lines."""

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()
        self.headers = [
            i + 1 for i, s in enumerate(self.lines) if re.match(r"\s*\[\[\s*question\s*\]\]", s)
        ]

    def block(self, q: int) -> tuple[int, int]:
        """The 1-based line range [start, end) of question q (0-based)."""
        start = self.headers[q] if q < len(self.headers) else 1
        end = self.headers[q + 1] if q + 1 < len(self.headers) else len(self.lines) + 1
        return start, end

    def key(self, key: str, start: int = 1, end: int | None = None, nth: int = 0) -> int:
        """The line of the nth `key =` (or `[[question.key]]`) in [start, end); start if none."""
        end = len(self.lines) + 1 if end is None else end
        pat = re.compile(rf"\s*(?:{re.escape(key)}\s*=|\[\[\s*question\.{re.escape(key)}\s*\]\])")
        found = [i for i in range(start, end) if pat.match(self.lines[i - 1])]
        return found[min(nth, len(found) - 1)] if found else start


def parse_plan(text: object) -> Plan:
    """A plan file's text -> Plan, or PlanError naming the field and its line."""
    if isinstance(text, bytes):
        if len(text) > MAX_PLAN_BYTES:
            raise PlanError(f"The plan file is larger than {MAX_PLAN_BYTES:,} bytes.")
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            raise PlanError("The plan file is not UTF-8 text.") from None
    if not isinstance(text, str):
        raise PlanError("A plan is a TOML text file.")
    if len(text.encode("utf-8", "replace")) > MAX_PLAN_BYTES:
        raise PlanError(f"The plan file is larger than {MAX_PLAN_BYTES:,} bytes.")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise PlanError(f"The plan file is not valid TOML: {e}.") from None
    where = _Lines(text)
    unknown = sorted(set(data) - {"slides", "question"})
    if unknown:
        raise PlanError(
            f"Unknown field {unknown[0]!r} at line {where.key(unknown[0])}: "
            "a plan has 'slides' and [[question]] entries."
        )
    slides = _slides(data.get("slides", list(SLIDE_KEYS)), where.key("slides"))
    raw = data.get("question", [])
    if not isinstance(raw, list) or not raw:
        raise PlanError("The plan has no [[question]] entries.")
    if len(raw) > MAX_QUESTIONS:
        raise PlanError(f"A plan has at most {MAX_QUESTIONS} questions; this one has {len(raw)}.")
    specs: list[QuestionSpec] = []
    for i, q in enumerate(raw):
        spec = _question(q, i, where, slides)
        if any(s.id == spec.id for s in specs):
            line = where.key("id", *where.block(i))
            raise PlanError(f"Field 'id' at line {line}: {spec.id!r} is used twice.")
        specs.append(spec)
    return Plan(slides, tuple(specs), text)


def _slides(value: object, line: int) -> tuple[str, ...]:
    names = f"a list of slide names, in the order the class sees them, from {', '.join(SLIDE_KEYS)}"
    if not isinstance(value, list) or not value:
        raise PlanError(f"Field 'slides' at line {line}: {names}.")
    for s in value:
        if not isinstance(s, str) or s not in SLIDE_KEYS:
            shown = repr(s[:40]) if isinstance(s, str) else f"a {type(s).__name__}"
            raise PlanError(f"Field 'slides' at line {line}: {shown} is not a slide; {names}.")
    twice = next((s for i, s in enumerate(value) if s in value[:i]), None)
    if twice is not None:
        raise PlanError(f"Field 'slides' at line {line}: {twice!r} is named twice.")
    return tuple(value)


def arrange(slides: Sequence[Slide], order: Sequence[str]) -> tuple[Slide, ...]:
    """The deck's slides in a plan's order: order names slide keys (``Plan.slides``); a slide it
    leaves out is not shown, and a key the deck does not have is skipped."""
    by_key = {s.key: s for s in slides}
    return tuple(by_key[k] for k in order if k in by_key)


def _text(q: dict, name: str, line: int, *, required: bool = True, most: int = 0) -> str:
    value = q.get(name)
    if value is None and not required:
        return ""
    most = most or LIMITS[name]
    if not isinstance(value, str) or not value.strip() or len(value) > most:
        raise PlanError(f"Field {name!r} at line {line}: text of 1 to {most} characters.")
    for m in _FIELD.finditer(value):
        if m[1] not in PLACEHOLDERS:
            raise PlanError(
                f"Field {name!r} at line {line}: {{{m[1]}}} is not a value the class computes; "
                f"use one of {', '.join('{' + p + '}' for p in PLACEHOLDERS)}."
            )
    return value


def _question(q: object, i: int, where: _Lines, slides: tuple[str, ...]) -> QuestionSpec:
    start, end = where.block(i)
    if not isinstance(q, dict):
        raise PlanError(f"Question {i + 1} at line {start} is not a table.")

    def at(key: str, nth: int = 0) -> int:
        return where.key(key, start, end, nth)

    for key in q:
        if key not in _QUESTION_KEYS:
            raise PlanError(
                f"Unknown field {key!r} at line {at(key)} in question {i + 1}: a question has "
                f"{', '.join(sorted(_QUESTION_KEYS))}."
            )
    qid = q.get("id")
    if not isinstance(qid, str) or not _ID.fullmatch(qid):
        raise PlanError(
            f"Field 'id' at line {at('id')}: lower-case letters, digits and _ (1 to 40), "
            "starting with a letter."
        )
    before = q.get("before")
    if not isinstance(before, str) or before not in slides:
        raise PlanError(
            f"Field 'before' at line {at('before')}: the slide the question is asked before, "
            f"one of {', '.join(slides)}."
        )
    try:
        kind = Kind(q.get("kind"))
    except ValueError:
        raise PlanError(
            f"Field 'kind' at line {at('kind')}: one of {', '.join(k.value for k in Kind)}."
        ) from None
    prompt = _text(q, "prompt", at("prompt"))
    why = _text(q, "why", at("why"))
    needs = _text(q, "needs", at("needs"), required=False)
    choices: tuple[str, ...] = ()
    if kind is Kind.CHOICE:
        raw = q.get("choices")
        if (
            not isinstance(raw, list)
            or not 2 <= len(raw) <= MAX_CHOICES
            or len(set(map(str, raw))) != len(raw)
        ):
            raise PlanError(
                f"Field 'choices' at line {at('choices')}: a list of 2 to {MAX_CHOICES} "
                "different answers."
            )
        choices = tuple(_text({"choice": c}, "choice", at("choices")) for c in raw)
    elif "choices" in q:
        raise PlanError(f"Field 'choices' at line {at('choices')}: only a choice question has it.")
    answer = ""
    if kind is not Kind.EXPRESSION:
        answer = _text(q, "answer", at("answer"))
        _check_answer(kind, answer, choices, at("answer"), "answer")
    elif "answer" in q:
        raise PlanError(
            f"Field 'answer' at line {at('answer')}: an expression question has none (the "
            "Playground's verdict judges each answer)."
        )
    mistakes = q.get("mistakes", "")
    if mistakes not in ("", "result", "operand") or (mistakes and kind is not Kind.SHAPE):
        raise PlanError(
            f'Field \'mistakes\' at line {at("mistakes")}: "result" or "operand", on a shape '
            "question only."
        )
    wrong = _wrongs(q.get("wrong", []), kind, choices, answer, where, start, end)
    return QuestionSpec(
        qid, before, kind, prompt, why, answer, needs, choices, wrong, mistakes, start
    )


def _check_answer(kind: Kind, answer: str, choices: tuple[str, ...], line: int, name: str) -> None:
    """Whether answer can be an answer of this kind (on the example of the form (2, 3, 4))."""
    if kind is Kind.CHOICE:
        if answer not in choices:
            raise PlanError(f"Field {name!r} at line {line}: one of the choices, word for word.")
        return
    values = placeholders(torch.zeros(2, 3, 4), torch.zeros(2, 3))
    filled = letters_shape(answer, values) or letters_number(answer, values)
    filled = filled or fill(answer, values)
    probe = Question("probe", "", "", kind, "", "")
    try:
        parse_answer(probe, filled)
    except AttnvizError:
        what = "a shape like (B, T, 1) or (2, 3, 1)" if kind is Kind.SHAPE else "a number"
        raise PlanError(f"Field {name!r} at line {line}: {what}.") from None


def _wrongs(raw, kind, choices, answer, where: _Lines, start: int, end: int) -> tuple[Wrong, ...]:
    line = where.key("wrong", start, end)
    if kind is Kind.EXPRESSION and raw:
        raise PlanError(
            f"Field 'wrong' at line {line}: an expression question's wrong answers are named by "
            "the verdict."
        )
    if not isinstance(raw, list) or len(raw) > MAX_WRONG:
        raise PlanError(f"Field 'wrong' at line {line}: at most {MAX_WRONG} [[question.wrong]].")
    out = []
    for n, w in enumerate(raw):
        line = where.key("wrong", start, end, n)
        nxt = where.key("wrong", line + 1, end) if n + 1 < len(raw) else end
        w_end = nxt if nxt > line else end
        if not isinstance(w, dict) or set(w) - {"answer", "why"}:
            extra = sorted(set(w) - {"answer", "why"}) if isinstance(w, dict) else ["?"]
            raise PlanError(
                f"Unknown field {extra[0]!r} at line {where.key(extra[0], line, w_end)} in a "
                "[[question.wrong]]: it has 'answer' and 'why'."
            )
        a_line, y_line = where.key("answer", line, w_end), where.key("why", line, w_end)
        text = _text(w, "answer", a_line)
        _check_answer(kind, text, choices, a_line, "wrong.answer")
        if text == answer:
            raise PlanError(f"Field 'wrong.answer' at line {a_line}: it is the right answer.")
        out.append(Wrong(text, _text(w, "why", y_line)))
    return tuple(out)


# ---- the questions on an example -------------------------------------------------------------------


def default_plan_text() -> str:
    """The built-in plan's file (package data)."""
    return resources.files("attnviz.classroom").joinpath("questions/default.toml").read_text()


@functools.cache
def default_plan() -> Plan:
    """The built-in plan: the Walkthrough's order and its five questions."""
    return parse_plan(default_plan_text())


def _canonical(spec: QuestionSpec, text: str, values: dict[str, str], choices) -> str:
    """A written answer (choice text, letters shape, number) -> the canonical stored form."""
    if spec.kind is Kind.CHOICE:
        return str(choices.index(fill(text, values)))
    filled = letters_shape(text, values) or letters_number(text, values) or fill(text, values)
    return parse_answer(Question("probe", "", "", spec.kind, "", ""), filled)


def catalogue_mistakes(
    which: str, net_output: Tensor, att_scores: Tensor
) -> dict[str, tuple[str, str]]:
    """shape -> (form key, explanation) of every catalogued wrong form, found by running it on
    net_output (B, T, H), att_scores (B, T): "result" the shape the form computes, "operand" the
    shape it gives the weights (the gallery's operand). The first form in the catalogue wins. The
    lessons' titles mark code with Markdown's backticks; the class shows these words as plain
    text, so the marks go."""
    x, w = net_output.detach(), att_scores.detach()
    shape = (int(x.shape[0]), int(x.shape[1]), int(x.shape[2]))
    inputs = forms.Inputs.of_weights(x, w)
    out: dict[str, tuple[str, str]] = {}
    for key, f in forms.FORMS.items():
        if not f.when(None, False):
            continue
        words = (
            (f.lesson and f.lesson.title) or (f.verdict and f.verdict.title) or f.gallery.title
            if (f.lesson or f.verdict or f.gallery)
            else key
        ).replace("`", "")
        if which == "operand":
            if f.gallery is None or f.gallery.operand is None:
                continue
            code, of = f.gallery.operand
            got = format_shape(of(shape))
            out.setdefault(got, (key, f"{got}: the shape of {code} ({words})"))
            continue
        try:
            result = f.runs[0](inputs)
        except RuntimeError:
            continue  # does not run on these sizes: no student gets its shape from it
        got = format_shape(tuple(result.shape))
        out.setdefault(got, (key, f"{got}: what {f.code} computes ({words})"))
    return out


def build_questions(plan: Plan, net_output: Tensor, att_scores: Tensor) -> tuple[Question, ...]:
    """The plan's questions on net_output (B, T, H), att_scores (B, T): prompts filled in,
    answers canonical, every wrong answer explained (the teacher's words first, then the
    catalogue's; an expression question's by the verdict, ``classroom.expression``)."""
    values = placeholders(net_output, att_scores)
    out = []
    for spec in plan.questions:
        choices = tuple(fill(c, values) for c in spec.choices)
        explained: dict[str, str] = {}
        judge = None
        if spec.kind is Kind.EXPRESSION:
            from attnviz.classroom import expression  # the sandbox, only for expression questions

            answer, judge = expression.RIGHT, expression.judge_on(net_output, att_scores)
            explained.update(expression.known_mistakes())
        else:
            answer = _canonical(spec, spec.answer, values, choices)
        for w in spec.wrong:
            label = fill(w.answer, values)
            explained[_canonical(spec, w.answer, values, choices)] = (
                f"{label}: {fill(w.why, values)}"
            )
        if spec.mistakes:
            for got, (_, words) in catalogue_mistakes(
                spec.mistakes, net_output, att_scores
            ).items():
                if got != answer:
                    explained.setdefault(got, words)
        out.append(
            Question(
                id=spec.id,
                slide=spec.before,
                prompt=fill(spec.prompt, values),
                kind=spec.kind,
                answer=answer,
                why=fill(spec.why, values),
                choices=choices,
                needs=fill(spec.needs, values),
                wrong=tuple(explained.items()),
                judge=judge,
            )
        )
    return tuple(out)


# ---- a plan inside a class record ------------------------------------------------------------------

PLAN_PARAM = "plan"  # the class's example string carries its plan under this key


def pack(text: str) -> str:
    """A plan's text -> a short URL-safe string (deflated, base64)."""
    return base64.urlsafe_b64encode(zlib.compress(text.encode("utf-8"), 9)).decode("ascii")


def unpack(packed: str) -> str:
    """pack's inverse, bounded: PlanError for anything else or anything over MAX_PLAN_BYTES."""
    try:
        raw = base64.urlsafe_b64decode(packed.encode("ascii"))
        inflate = zlib.decompressobj()
        text = inflate.decompress(raw, MAX_PLAN_BYTES + 1)
    except (ValueError, binascii.Error, zlib.error, UnicodeEncodeError):
        raise PlanError("The class's plan could not be read.") from None
    if len(text) > MAX_PLAN_BYTES or inflate.unconsumed_tail:
        raise PlanError(f"The class's plan is larger than {MAX_PLAN_BYTES:,} bytes.")
    return text.decode("utf-8", "replace")


def with_plan(example: str, text: str | None) -> str:
    """A class's example string (a Playground query) carrying the plan's text (None: the
    built-in plan, carried as nothing)."""
    if text is None:
        return example
    extra = urlencode({PLAN_PARAM: pack(text)})
    return f"{example}&{extra}" if example else extra


def plan_of(example: str) -> Plan:
    """The plan a class's example string carries (the built-in one when it carries none)."""
    packed = dict(parse_qsl(example)).get(PLAN_PARAM)
    return default_plan() if packed is None else parse_plan(unpack(packed))


def questions(net_output: Tensor, att_scores: Tensor) -> tuple[Question, ...]:
    """The built-in check-in questions (``questions/default.toml``) on this example:
    net_output (B, T, H), att_scores (B, T)."""
    return build_questions(default_plan(), net_output, att_scores)
