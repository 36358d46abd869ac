"""Every number in a notebook's prose is computed by its code, never typed.

A Markdown cell may hold a number only when it is an input the code itself uses (a literal in a code cell,
such as `batch_size=256`), a name (Llama 2, ResNet-50, lesson 3, a year) or one of the few facts listed
in ALLOWED with the reason. Results and conclusions are rendered by the code (IPython.display.Markdown),
so a change in the model cannot leave a stale number in the text.
"""

import re

import nbformat
import pytest
from conftest import ROOT
from test_example_notebooks import NOTEBOOKS, executed

# numbers that are neither inputs nor results: why each is allowed
ALLOWED = {
    "2": "a multiply and an add are 2 FLOPs; keys and values are 2 tensors; 2 bytes per fp16 value",
    "7": "bf16 stores 7 mantissa bits (a property of the format)",
    "10": "fp16 stores 10 mantissa bits (a property of the format)",
    "1": "one (a single stream, one change)",
    "100": "100% is all of the time",
}
# names that contain numbers: stripped before the prose is read
NAMES = [
    r"\bLlama[ -]\d+(?:\s+\d+B)?",
    r"\b[Ll]essons? \d+(?:\s*(?:,|and|to|-)\s*\d+)*",
    r"\bXeon(?: Platinum)? \d+\+?",
    r"\bILSVRC-\d+",
    r"\bTPU v\d+\w*",
    r"\b(?:in|from|since|of|until) (?:19|20)\d\d\b",
    r"\(\s*(?:19|20)\d\d\s*\)",
    r",\s*(?:19|20)\d\d\)",  # (Turing, 2018), (Dettmers et al., 2022)
    r"(?m)^\|\s*\d+\s*\|",  # a table's lesson column
    r"\b\d+-bit\b",  # 16-bit, 8-bit, 4-bit formats
    r"\bexercise [A-Z]\b",
    r"\bnotebook \d+",
    r"\bcell \d+",
]
NUMBER = re.compile(r"(?<![\w.\-/+])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![\w])")
CODE_NUMBER = re.compile(r"(?<![\w.])\d[\d_]*(?:\.\d+)?(?:[eE][+-]?\d+)?")


def _value(text: str) -> float:
    return float(text.replace(",", "").replace("_", ""))


def prose_numbers(markdown: str) -> list[str]:
    """The numbers a Markdown text states, names and link targets left out."""
    text = re.sub(r"\]\([^)]*\)", "]", markdown)  # link targets
    text = re.sub(r"(?m)^\s*#+\s*\d+\.\s", "", text)  # numbered headings
    text = re.sub(r"(?m)^\s*\d+\.\s", "", text)  # numbered lists
    for name in NAMES:
        text = re.sub(name, " ", text)
    return NUMBER.findall(text)


def code_numbers(nb) -> set[float]:
    """The inputs: every number literal in the notebook's code cells."""
    return {_value(n) for c in nb.cells if c.cell_type == "code" for n in CODE_NUMBER.findall(c.source)}


def typed_numbers(nb) -> list[tuple[int, str]]:
    """(cell index, number) of every number in a Markdown cell that the code does not produce."""
    allowed = code_numbers(nb) | {_value(k) for k in ALLOWED}
    return [
        (i, n)
        for i, c in enumerate(nb.cells)
        if c.cell_type == "markdown"
        for n in prose_numbers(c.source)
        if _value(n) not in allowed
    ]


def _nb(*cells):
    return nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell(s[3:]) if s.startswith("md:") else nbformat.v4.new_code_cell(s) for s in cells
        ]
    )


def test_the_checker_finds_a_typed_result():
    nb = _nb("md:The A100 reaches 2,470 images/s, 35% faster.", "r = simulate(s.replace(batch_size=256))")
    assert typed_numbers(nb) == [(0, "2,470"), (0, "35")]


def test_the_checker_allows_inputs_and_names():
    nb = _nb(
        "md:## 2. Llama 2 7B at batch 256 on a Xeon 8480+ (lesson 3), ResNet-50, fp16, from 2018; see [1](01_x.ipynb).",
        "r = simulate(s.replace(batch_size=256))",
    )
    assert typed_numbers(nb) == []


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_no_typed_number_in_the_prose(path):
    nb = nbformat.read(path, as_version=4)
    typed = typed_numbers(nb)
    assert not typed, [f"cell {i}: {n!r} in {nb.cells[i].source[:80]!r}..." for i, n in typed]


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_rendered_prose_is_complete(path):
    """The prose the code renders has every number filled in: no placeholder, nan or None left."""
    nb, _ = executed(path)
    rendered = [
        o["data"]["text/markdown"]
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.outputs
        if o.output_type in ("display_data", "execute_result") and "text/markdown" in o.get("data", {})
    ]
    assert rendered, "the notebook renders no prose from its results"
    for text in rendered:
        assert not re.search(r"\{[a-z_]+[^}]*\}|\bnan\b|\bNone\b|\binf\b", text), text


LESSONS = [p for p in NOTEBOOKS if re.match(r"(0[1-9]|[1-9]\d)_", p.name)]


@pytest.mark.parametrize("path", LESSONS, ids=[p.name for p in LESSONS])
def test_each_lesson_opens_with_a_prediction_and_ends_with_a_quiz(path):
    from jupyter_hwsim.teaching import quiz

    n = int(path.name[:2])
    nb = nbformat.read(path, as_version=4)
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    first = next(i for i, src in enumerate(code) if f'quiz.ask("{n}.predict")' in src)
    assert f'quiz.check("{n}.predict"' in code[first + 1]
    assert first <= 2, "the prediction comes before the lesson runs anything"
    ids = sorted(q for q in quiz.questions() if q.startswith(f"{n}.q"))
    assert 3 <= len(ids) <= 5
    tail = "\n".join(code[-2:])
    assert all(f'"{q}"' in tail for q in ids), "the quiz closes the lesson"
    assert str(ROOT) not in "\n".join(code)
