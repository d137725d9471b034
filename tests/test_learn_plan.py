"""Lesson 04's class plan (lessons/plans/learn_the_scores.toml): the built-in questions plus a
predict-first question on training with the trap, parsed as an upload would be."""

from __future__ import annotations

from pathlib import Path

import pytest

from attnviz import examples
from attnviz.classroom import plan

PLAN = Path(__file__).resolve().parents[1] / "lessons" / "plans" / "learn_the_scores.toml"


@pytest.fixture(scope="module")
def questions():
    p = plan.parse_plan(PLAN.read_text(encoding="utf-8"))
    return {q.id: q for q in plan.build_questions(p, *examples.classic())}


def test_plan_keeps_the_builtin_questions(questions):
    builtin = plan.build_questions(plan.default_plan(), *examples.classic())
    assert [q.id for q in builtin] == list(questions)[: len(builtin)]


def test_trap_training_question_is_asked_before_the_trap_slide(questions):
    q = questions["trap_trains"]
    assert q.slide == "trap"
    assert q.label(q.answer) == "it trains without an error, and ends less accurate"
    assert "att_scores[:, None]" in q.needs  # the example's own trap code, computed


def test_every_wrong_choice_is_explained(questions):
    q = questions["trap_trains"]
    wrong = {str(i) for i in range(len(q.choices))} - {q.answer}
    assert all(q.explain(w) for w in wrong)
