"""Predict-then-run questions and end-of-lesson quizzes: questions are data, one function checks them.

A question (see questions.py) is its text, its choices or a numeric answer with a tolerance, the
explanation, and a hint for each wrong choice. Where the right answer depends on the model, the
question carries a `facts` function that simulates and returns the numbers; the answer, the text and
the explanation are computed from them when the question is shown or checked, so they cannot go stale.

    quiz.ask("1.predict")              # renders the question (Markdown in a notebook, text elsewhere)
    quiz.check("1.predict", "b")       # prints the verdict, the explanation or a hint; returns True/False
    quiz.check_all({"1.q1": "a", ...}) # the same for several, with a score

A prediction ("N.predict") shows its explanation whatever the answer: the learner committed to it, and
the lesson that follows shows why. A quiz question answered wrongly gives a hint, not the answer, so it
can be tried again. Pure core: nothing here imports a Jupyter module.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Question", "ask", "check", "check_all", "correct_answers", "facts", "question", "questions"]


@dataclass(frozen=True)
class Question:
    """One question. Text fields are format strings over the question's facts."""

    qid: str
    text: str
    choices: Mapping[str, str] = field(default_factory=dict)  # key -> text; empty: a numeric answer
    # the right key, a tuple of keys (each one accepted), a number, or a function of the facts giving one of those
    answer: Any = None
    explain: str = ""  # shown with a right answer, and with any answer to a prediction
    hints: Mapping[str, str] = field(default_factory=dict)  # wrong key -> hint; numeric: "high", "low"
    tolerance: float = 0.1  # numeric answers: relative
    unit: str = ""
    facts: Callable[[], dict] | None = None

    @property
    def is_prediction(self) -> bool:
        return self.qid.endswith(".predict")

    @property
    def numeric(self) -> bool:
        return not self.choices


_FACTS: dict[str, dict] = {}


def questions() -> dict[str, Question]:
    from .questions import QUESTIONS

    return {q.qid: q for q in QUESTIONS}


def question(qid: str) -> Question:
    qs = questions()
    if qid not in qs:
        raise KeyError(f"no question {qid!r}; known: {', '.join(sorted(qs))}")
    return qs[qid]


def facts(qid: str) -> dict:
    """The numbers a question depends on, computed once per process."""
    q = question(qid)
    if qid not in _FACTS:
        _FACTS[qid] = dict(q.facts()) if q.facts else {}
    return _FACTS[qid]


def correct_answers(qid: str):
    """The accepted keys (a tuple) of a multiple-choice question, or the number of a numeric one."""
    q = question(qid)
    a = q.answer(facts(qid)) if callable(q.answer) else q.answer
    if q.numeric:
        return float(a)
    keys = (a,) if isinstance(a, str) else tuple(a)
    unknown = [k for k in keys if k not in q.choices]
    if not keys or unknown:
        raise ValueError(f"question {qid}: answer {keys!r} is not among its choices {list(q.choices)}")
    return keys


def _fmt(qid: str, text: str) -> str:
    return text.format(**facts(qid)) if text else ""


class Sheet:
    """Questions rendered for reading: Markdown in a notebook, plain text elsewhere."""

    def __init__(self, qids: tuple[str, ...]):
        self.qids = qids

    def _lines(self, bold: str, item: str) -> list[str]:
        out = []
        for qid in self.qids:
            q = question(qid)
            label = "Predict" if q.is_prediction else f"Question {qid}"
            out.append(f"{bold}{label}{bold} {_fmt(qid, q.text)}")
            if q.numeric:
                unit = f" (in {q.unit})" if q.unit else ""
                out.append(f"{item}answer with a number{unit}; within {q.tolerance:.0%} counts")
            for key, text in q.choices.items():
                out.append(f"{item}{bold}{key}{bold}) {_fmt(qid, text)}")
            out.append("")
        return out

    def _repr_markdown_(self) -> str:
        return "\n".join(self._lines("**", "- "))

    def __repr__(self) -> str:
        return "\n".join(self._lines("", "   "))


def ask(*qids: str) -> Sheet:
    """The questions, to show before the learner answers (the last expression of a cell)."""
    for qid in qids:
        question(qid)
    return Sheet(qids)


def _number(x):
    if isinstance(x, bool):
        return None
    if isinstance(x, str):
        x = x.replace(",", "").replace("%", "").replace("x", "").strip()
    try:
        x = float(x)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def _key(q: Question, answer) -> str | None:
    """The choice key an answer names: its key ('b', 'B', 'b)') or its text, ignoring case."""
    raw = str(answer).strip().lower()
    a = raw.rstrip(").").strip()
    for key in q.choices:
        if a == key.lower():
            return key
    for key, text in q.choices.items():
        if raw and raw == _fmt(q.qid, text).strip().lower():
            return key
    return None


def _say(*lines: str) -> None:
    for line in lines:
        if line:
            print(line)


def check(qid: str, answer) -> bool:
    """Check one answer: prints the verdict with the explanation, or a hint; returns True when right."""
    q = question(qid)
    if answer is None:
        what = "a number" if q.numeric else "the letter of your choice (" + ", ".join(q.choices) + ")"
        _say(f"{qid}: fill in your answer first: replace None with {what}, then run this cell again.")
        return False
    explain = _fmt(qid, q.explain)
    if q.numeric:
        x, truth = _number(answer), correct_answers(qid)
        if x is None:
            _say(f"{qid}: {answer!r} is not a number: give a plain number such as 12.5.")
            return False
        if abs(x - truth) <= q.tolerance * abs(truth):
            _say(f"{qid}: correct! " + explain)
            return True
        side = "high" if x > truth else "low"
        if truth and abs(x - 100 * truth) <= q.tolerance * abs(100 * truth):
            hint = "that looks like a percentage: give a fraction (0.05 means 5%)."
        else:
            hint = _fmt(qid, q.hints.get(side, "")) or "check the units and the formula."
        _say(f"{qid}: not quite, {x:g} is too {side} (more than {q.tolerance:.0%} off). Hint: {hint}")
        if q.is_prediction:
            _say("What happens: " + explain)
        return False
    key = _key(q, answer)
    if key is None:
        _say(f"{qid}: {answer!r} is not one of the choices: answer with one of " + ", ".join(q.choices) + ".")
        return False
    right = correct_answers(qid)
    if key in right:
        _say(f"{qid}: correct! " + explain)
        return True
    hint = _fmt(qid, q.hints.get(key, "")) or "read the question again: which choice matches what you saw?"
    _say(f"{qid}: not {key}. {hint}")
    if q.is_prediction:
        _say("What happens: " + explain)
    return False


def check_all(answers: Mapping[str, Any]) -> bool:
    """Check several answers ({question id: answer}); prints each verdict and the score."""
    results = [check(qid, a) for qid, a in answers.items()]
    print(f"score: {sum(results)} of {len(results)}")
    return all(results)
