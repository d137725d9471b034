"""A class plan is a TOML file a teacher writes: parsed strictly (a deliberate error in each field is
refused with a message naming that field and its line), its questions computed on the class's
example (B, T, H all different, H < T, T == H), every catalogued wrong answer explained by the form
that produces it, found by running that form (the catalogue's runs are the oracle)."""

from __future__ import annotations

import random
import re

import pytest

from attnviz import examples, forms
from attnviz.classroom import deck, plan
from attnviz.classroom.plan import PlanError, build_questions, default_plan, parse_plan
from attnviz.classroom.question import Kind, format_shape

SHAPES = [(2, 3, 5), (3, 4, 2), (2, 4, 4)]

TEACHER = """\
slides = ["net_output", "att_scores", "unsqueeze", "align", "expand", "product", "sum", "result",
          "cell", "trap", "grad", "view"]

[[question]]
id = "how_many_words"
before = "att_scores"
kind = "number"
prompt = "net_output is {net_output}. How many words does each sentence have?"
needs = "net_output.shape"
answer = "T"
why = "The middle axis holds the words: T = {T}."

[[question]]
id = "weighted_shape"
before = "sum"
kind = "shape"
prompt = "What shape does (net_output * att_scores[..., None]).sum(axis=1) have?"
answer = "(B, H)"
why = "The words are summed away: {weighted}."
mistakes = "result"

[[question.wrong]]
answer = "(B, T, H)"
why = "That is the product before the sum."

[[question]]
id = "which_axis"
before = "sum"
kind = "choice"
prompt = "Which axis holds the words?"
choices = ["axis 0", "axis 1", "axis 2"]
answer = "axis 1"
why = "(B, T, H): T is axis 1."

[[question.wrong]]
answer = "axis 2"
why = "Axis 2 is the hidden features."
"""

# (the line as written, what it becomes, the field the message must name)
BROKEN = [
    ('id = "how_many_words"', 'id = "How Many"', "id"),
    ('before = "att_scores"', 'before = "slide 2"', "before"),
    ('kind = "number"', 'kind = "essay"', "kind"),
    (
        'prompt = "net_output is {net_output}. How many words does each sentence have?"',
        'prompt = "How many {words}?"',
        "prompt",
    ),
    ('needs = "net_output.shape"', "needs = 3", "needs"),
    ('answer = "T"', 'answer = "many"', "answer"),
    ('why = "The middle axis holds the words: T = {T}."', 'why = ""', "why"),
    ('mistakes = "result"', 'mistakes = "all"', "mistakes"),
    ('choices = ["axis 0", "axis 1", "axis 2"]', 'choices = ["axis 1"]', "choices"),
    ('answer = "axis 1"', 'answer = "axis one"', "answer"),
    ('answer = "(B, T, H)"', 'answer = "(B, H)"', "wrong.answer"),
    ('why = "Axis 2 is the hidden features."', "why = 2", "why"),
    ('slides = ["net_output", "att_scores",', 'slides = ["net_output", "nowhere",', "slides"),
    ('kind = "number"', 'kind = "number"\ncolour = "red"', "colour"),
]


def _line_of(old: str, new: str) -> int:
    """The line of TEACHER where old (replaced by new) ends up."""
    return TEACHER[: TEACHER.index(old)].count("\n") + 1 + new.count("\n")


@pytest.mark.parametrize(
    ("old", "new", "field"), BROKEN, ids=[b[2] + str(i) for i, b in enumerate(BROKEN)]
)
def test_a_deliberate_error_in_each_field_names_the_field_and_its_line(old, new, field):
    assert TEACHER.count(old) >= 1
    text = TEACHER.replace(old, new, 1)
    with pytest.raises(PlanError) as e:
        parse_plan(text)
    message = str(e.value)
    assert repr(field) in message or f"'{field}'" in message
    assert f"line {_line_of(old, new)}" in message, message


def test_a_file_that_is_not_toml_says_where():
    with pytest.raises(PlanError, match=r"not valid TOML.*line 2"):
        parse_plan('slides = ["sum"]\n[[question]\n')


def test_a_large_or_binary_upload_is_refused_before_parsing():
    with pytest.raises(PlanError, match="larger than"):
        parse_plan(b"#" * (plan.MAX_PLAN_BYTES + 1))
    with pytest.raises(PlanError, match="UTF-8"):
        parse_plan(b"\xff\xfe" + b"x" * 10)


def test_the_same_id_twice_is_refused_at_its_line():
    text = TEACHER.replace('id = "which_axis"', 'id = "weighted_shape"')
    lines = text.splitlines()
    second = len(lines) - lines[::-1].index('id = "weighted_shape"')
    with pytest.raises(PlanError, match=f"'id' at line {second}: 'weighted_shape' is used twice"):
        parse_plan(text)


@pytest.mark.parametrize("shape", SHAPES)
def test_a_teachers_questions_are_computed_on_the_example(shape):
    x, w = examples.random_example(*shape, seed=2)
    b, t, h = shape
    qs = {q.id: q for q in build_questions(parse_plan(TEACHER), x, w)}
    assert qs["how_many_words"].answer == str(t)
    assert qs["weighted_shape"].answer == format_shape(tuple((x * w[..., None]).sum(1).shape))
    assert qs["which_axis"].answer == "1"
    assert (
        qs["how_many_words"].prompt
        == f"net_output is {(b, t, h)}. How many words does each sentence have?"
    )
    # the teacher's words for (B, T, H), not the catalogue's
    assert (
        qs["weighted_shape"]
        .explain(format_shape((b, t, h)))
        .endswith("the product before the sum.")
    )


def test_the_builtin_five_are_one_plan_file():
    p = default_plan()
    assert [q.id for q in p.questions] == [
        "unsqueeze_shape", "sum_axis", "result_shape", "trap", "view_copy",
    ]  # fmt: skip
    assert plan.default_plan_text() == p.text


@pytest.mark.parametrize("shape", SHAPES[:2])  # at T == H, (B, H) is att_scores' (B, T) too
def test_each_builtin_question_is_asked_before_the_slide_that_answers_it(shape):
    x, w = examples.random_example(*shape, seed=3)
    p = default_plan()
    for q in build_questions(p, x, w):
        assert q.slide in p.slides
        # the question's text never holds its own answer (a shape, or a number)
        if q.kind in (Kind.SHAPE, Kind.NUMBER):
            assert q.label(q.answer) not in q.prompt + q.needs, q.id


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("which", ["result", "operand"])
def test_every_catalogued_wrong_shape_is_explained_by_the_form_that_computes_it(shape, which):
    x, w = examples.random_example(*shape, seed=4)
    found = plan.catalogue_mistakes(which, x, w)
    assert found
    for got, (key, words) in found.items():
        f = forms.FORMS[key]
        if which == "result":
            ran = f.runs[0](forms.Inputs.of_weights(x, w))
            assert format_shape(tuple(ran.shape)) == got
            assert f.code in words
        else:
            code, of = f.gallery.operand
            assert format_shape(of(shape)) == got and code in words


@pytest.mark.parametrize("shape", SHAPES)
def test_the_built_in_questions_words_hold_no_markdown_marks(shape):
    """The class shows a question's words as plain text (st.text): a catalogued mistake's lesson
    title, "forgot `[..., None]`", showed its backticks on every phone."""
    x, w = examples.random_example(*shape, seed=6)
    for q in build_questions(default_plan(), x, w):
        for text in (q.prompt, q.why, q.needs, *q.choices, *(words for _, words in q.wrong)):
            assert "`" not in text, (q.id, text)


def test_the_unsummed_product_is_explained_as_multiplied_but_not_summed():
    x, w = examples.random_example(2, 3, 5, seed=5)
    q = next(q for q in build_questions(default_plan(), x, w) if q.id == "result_shape")
    assert re.fullmatch(r"\(2, 3, 5\): .*multiplied but did not sum.*", q.explain("(2, 3, 5)"))
    assert q.explain(q.answer) == ""


def test_a_saved_plan_travels_in_the_class_record_and_comes_back_word_for_word():
    example = "preset=classic&shape=2x3x5"
    carried = plan.with_plan(example, TEACHER)
    assert plan.plan_of(carried).text == TEACHER
    assert plan.plan_of(example) == default_plan()  # none carried: the built-in plan
    assert plan.with_plan(example, None) == example


def test_a_forged_packed_plan_is_refused_not_inflated():
    import base64
    import zlib

    bomb = base64.urlsafe_b64encode(zlib.compress(b"#" * 10_000_000)).decode()
    with pytest.raises(PlanError, match="larger than"):
        plan.unpack(bomb)
    with pytest.raises(PlanError, match="could not be read"):
        plan.unpack("not base64 at all!")


# ---- the slide order ------------------------------------------------------------------------------

#: A plan that shows the trap before the sum and leaves out the gradient and view slides.
REORDERED = ["net_output", "att_scores", "unsqueeze", "trap", "align", "product", "sum", "result"]


def _with_slides(order: list[str]) -> str:
    first, rest = TEACHER.split("\n\n", 1)
    assert first.startswith("slides = ")
    return "slides = [" + ", ".join(f'"{k}"' for k in order) + "]\n\n" + rest


def test_the_deck_has_the_slides_a_plan_may_name():
    x, w = examples.random_example(2, 3, 5, seed=6)
    assert tuple(s.key for s in deck.story(x, w).slides) == plan.SLIDE_KEYS


@pytest.mark.parametrize("seed", range(4))
def test_arrange_puts_the_deck_in_the_plans_order_and_leaves_out_the_rest(seed):
    x, w = examples.random_example(2, 3, 5, seed=seed)
    slides = deck.story(x, w).slides
    rng = random.Random(seed)
    order = rng.sample(plan.SLIDE_KEYS, rng.randint(1, len(plan.SLIDE_KEYS)))
    got = plan.arrange(slides, order)
    # oracle: for each key of the order, the deck's slide with that key, by a plain search
    expected = []
    for key in order:
        for s in slides:
            if s.key == key:
                expected.append(s)
    assert list(got) == expected
    assert [s.key for s in got] == order


def test_a_plans_order_and_subset_are_parsed_as_written():
    p = parse_plan(_with_slides(REORDERED))
    assert p.slides == tuple(REORDERED)


def test_a_plan_without_slides_has_the_decks_order():
    text = TEACHER.split("\n\n", 1)[1]
    assert parse_plan(text).slides == plan.SLIDE_KEYS


def test_a_saved_plan_comes_back_in_the_same_order():
    text = _with_slides(REORDERED)
    carried = plan.with_plan("preset=classic&shape=2x3x5", text)
    saved = plan.plan_of(carried).text  # what "Save this class as a plan" downloads
    assert parse_plan(saved).slides == tuple(REORDERED)
    again = plan.plan_of(plan.with_plan("", saved))  # started again next week
    assert again.slides == tuple(REORDERED) and again.questions == parse_plan(text).questions


@pytest.mark.parametrize(
    ("slides", "said"),
    [
        ('["net_output", "sum", "net_output", "att_scores"]', "'net_output' is named twice"),
        ('["net_output", "sum", "summary", "att_scores"]', "'summary' is not a slide"),
        ('["net_output", 3, "sum", "att_scores"]', "a int is not a slide"),
        ("[]", "a list of slide names"),
        ('"net_output"', "a list of slide names"),
    ],
)
def test_a_bad_slide_list_names_the_field_its_line_and_the_slide(slides, said):
    text = "# my plan\n\n" + _with_slides(["sum"]).replace('["sum"]', slides)
    with pytest.raises(PlanError) as e:
        parse_plan(text)
    assert f"Field 'slides' at line 3: {said}" in str(e.value)


def test_a_question_before_a_slide_the_plan_leaves_out_is_refused_at_its_line():
    text = _with_slides(["net_output", "sum", "result"])  # how_many_words is before att_scores
    line = text[: text.index('before = "att_scores"')].count("\n") + 1
    with pytest.raises(PlanError, match=rf"'before' at line {line}: .* one of net_output, sum,"):
        parse_plan(text)
