"""A display name a student types (attnviz.classroom.secret.parse_name): bounded before any work on
it, folded and trimmed, and refused plainly when it is not a name."""

from __future__ import annotations

import tracemalloc

import pytest

from attnviz import AttnvizError
from attnviz.classroom import secret


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("Ana\u200bMaria", "AnaMaria"),  # a zero-width space from a paste
        ("\ufb01ona", "fiona"),  # a ligature folds to its letters
        ("Nguy\u1ec5n", "Nguy\u1ec5n"),
        ("Nguye\u0302\u0303n", "Nguy\u1ec5n"),  # two marks on one letter, composed
        ("  Ann \t Lee ", "Ann Lee"),
        ("x" * 40, "x" * 40),
    ],
)
def test_a_name_is_folded_and_trimmed(text, name):
    assert secret.parse_name(text) == name


@pytest.mark.parametrize(
    "text",
    [
        "Z" + "\u0301" * 38,  # one letter under 38 accents
        "\ufdfd" * 40,  # a whole phrase in each glyph
        "\ufdfa" * 3,  # folds to its letters: 54 of them
        "x" * 41,
        " " * 200 + "x",  # whitespace counts before it is collapsed
    ],
)
def test_a_name_that_is_not_a_name_is_refused(text):
    with pytest.raises(AttnvizError, match="display name"):
        secret.parse_name(text)


def test_a_huge_name_is_refused_before_any_work_on_it():
    """24 MB (just under a websocket message's cap) costs no copy of itself."""
    huge = "a " * 12_000_000
    tracemalloc.start()
    try:
        with pytest.raises(AttnvizError, match="at most 40 characters"):
            secret.parse_name(huge)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000
