"""The live class's data without a store: class codes, tokens and names parsed strictly, and the
check-in questions computed on the example (B, T, H all different, and T == H)."""

from __future__ import annotations

import pytest
import torch

from attnviz import examples, trace
from attnviz.classroom import Kind, parse_answer, parse_code, parse_shape, questions
from attnviz.classroom import secret as sec
from attnviz.errors import AttnvizError

SHAPES = [(2, 3, 5), (3, 4, 2), (2, 4, 4)]  # all different, H < T, T == H


def _example(shape):
    return examples.random_example(*shape, seed=1)


@pytest.mark.parametrize("text", ["ACD-EFG-HJK", "acdefghjk", " acd efg hjk ", "ACD EFG-HJK"])
def test_a_class_code_is_read_in_the_ways_people_type_it(text):
    assert parse_code(text) == "ACDEFGHJK"


@pytest.mark.parametrize(
    "text",
    ["", "ACD-EFG-HJ", "ACD-EFG-HJKA", "ACD-EFG-HJ0", "AC-DEFG-HJK", "ＡCD-EFG-HJK", "A" * 5000,
     "ACD--EFGHJK", "<b>ACDEFGHJ", None, 123456789],
)  # fmt: skip
def test_anything_else_is_not_a_class_code(text):
    with pytest.raises(AttnvizError, match="9 letters and digits"):
        parse_code(text)


def test_new_codes_use_the_alphabet_and_differ():
    codes = {sec.new_code() for _ in range(200)}
    assert len(codes) == 200
    assert all(parse_code(sec.format_code(c)) == c for c in codes)


def test_the_store_keeps_only_the_tokens_hash():
    token = sec.new_token()
    assert sec.parse_token(token) == token and len(token) == 32
    assert sec.token_matches(token, sec.token_hash(token))
    assert not sec.token_matches(sec.new_token(), sec.token_hash(token))
    assert token not in sec.token_hash(token)


@pytest.mark.parametrize("text", ["", "x" * 31, "x" * 33, "x" * 31 + "!", None])
def test_a_damaged_token_is_refused(text):
    with pytest.raises(AttnvizError):
        sec.parse_token(text)


@pytest.mark.parametrize(
    "text, name", [(None, ""), ("  Ann   Lee ", "Ann Lee"), ("**x**", "**x**")]
)
def test_a_display_name_is_trimmed_text(text, name):
    assert sec.parse_name(text) == name


@pytest.mark.parametrize("text", ["x" * 41, "a\x00b", "a\u202eb", 5])
def test_a_long_or_control_name_is_refused(text):
    with pytest.raises(AttnvizError):
        sec.parse_name(text)


@pytest.mark.parametrize(
    "text, shape",
    [("(2, 3, 1)", (2, 3, 1)), ("2,3,1", (2, 3, 1)), ("[2, 3, 1]", (2, 3, 1)), ("(5,)", (5,)),
     (" ( 2 , 3 ) ", (2, 3)), ("7", (7,))],
)  # fmt: skip
def test_a_typed_shape_is_read_as_a_tuple(text, shape):
    assert parse_shape(text) == shape


@pytest.mark.parametrize(
    "text",
    ["", "()", "(2, 3, 1", "2, 3, 1)", "(2, 3, 1]", "(2,, 3)", "2x3x1", "(²,3)", "(2, 3.0)",
     "(-2, 3)", "(1,2,3,4,5,6,7)", "1" * 41, "(٣, 2)", "torch.Size([2, 3])", None],
)  # fmt: skip
def test_anything_else_is_not_a_shape(text):
    with pytest.raises(AttnvizError):
        parse_shape(text)


@pytest.mark.parametrize("shape", SHAPES)
def test_there_are_questions_on_the_four_ideas(shape):
    ids = {q.id for q in questions(*_example(shape))}
    assert {"unsqueeze_shape", "sum_axis", "trap", "view_copy"} <= ids


@pytest.mark.parametrize("shape", SHAPES)
def test_the_shape_answers_are_what_torch_gives(shape):
    x, w = _example(shape)
    qs = {q.id: q for q in questions(x, w)}
    assert qs["unsqueeze_shape"].answer == str(tuple(w[..., None].shape))
    assert qs["result_shape"].answer == str(tuple((x * w[..., None]).sum(dim=1).shape))


@pytest.mark.parametrize("shape", SHAPES)
def test_the_sum_answer_is_the_axis_whose_removal_gives_the_result(shape):
    x, w = _example(shape)
    q = next(q for q in questions(x, w) if q.id == "sum_axis")
    product = (x * w[..., None]).double()  # (B,T,H)
    want = torch.einsum("bth,bt->bh", x.double(), w.double())  # (B,H)
    torch.testing.assert_close(product.sum(dim=int(q.answer)), want)


@pytest.mark.parametrize("shape", SHAPES)
def test_the_trap_answer_is_silently_wrong(shape):
    x, w = _example(shape)
    q = next(q for q in questions(x, w) if q.id == "trap")
    sx, sw = trace.square_variant(x, w) if shape[1] != shape[2] else (x, w)
    got = (sx * sw[:, None]).sum(dim=1)  # runs: (B,T,T) * (B,1,T)
    right = (sx * sw[..., None]).sum(dim=1)
    assert got.shape == right.shape and not torch.allclose(got, right)
    assert "right shape and wrong numbers" in q.choices[int(q.answer)]


def test_the_view_answer_says_expand_is_a_view():
    q = next(q for q in questions(*examples.classic()) if q.id == "view_copy")
    assert q.choices[int(q.answer)].startswith("a view")


@pytest.mark.parametrize("text", ["3", "-1", "1.0", "01x", "", None, "١"])
def test_a_choice_must_be_one_of_the_choices(text):
    q = next(q for q in questions(*examples.classic()) if q.kind is Kind.CHOICE)
    with pytest.raises(AttnvizError, match="Pick one"):
        parse_answer(q, text)


def test_a_tabs_id_is_made_and_parsed_strictly():
    ids = {sec.new_session() for _ in range(100)}
    assert len(ids) == 100 and all(sec.parse_session(i) == i for i in ids)
    for bad in ("", "a" * 15, "a" * 17, "a" * 15 + "!", None, 16):
        with pytest.raises(AttnvizError):
            sec.parse_session(bad)
