"""A notebook's parameters in its own language (spawner/notebookparams/), by equality, and "Make this the
notebook's defaults" (spawner/jupyter/runs/defaults.py) against Jupyter's own file contents manager.

The hub's reading of Python cells is tested in test_runs.py too (as the hub uses them).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager

from spawner.jupyter.runs.defaults import checked_path, copy_names, make_defaults
from spawner.notebookparams import (
    NotRunnable,
    Parameter,
    check_value,
    generic,
    language_of,
    notebook_parameters,
    parameters,
    r,
    rewrite,
    scanner,
)

ROOT = Path(__file__).resolve().parents[2]
R_META = {"kernelspec": {"display_name": "R", "language": "R", "name": "ir"}, "language_info": {"name": "R"}}
PY_META = {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}}


def a_notebook(parameters_source: str, metadata: dict, tags: tuple[str, ...] = ("parameters",)) -> dict:
    return {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": metadata,
        "cells": [
            {"cell_type": "markdown", "id": "m", "metadata": {}, "source": "# Title"},
            {"cell_type": "code", "id": "p", "metadata": {"tags": list(tags)}, "source": parameters_source,
             "execution_count": None, "outputs": []},
            {"cell_type": "code", "id": "w", "metadata": {}, "source": "print(lr)", "execution_count": 1,
             "outputs": [{"output_type": "stream", "name": "stdout", "text": "0.01\n"}]},
        ],
    }  # fmt: skip


def spans(found: list[Parameter]) -> list[tuple[int, int]]:
    return [(p.line, p.end_line) for p in found]


# --- reading ------------------------------------------------------------------------------
def test_the_r_template_has_its_formula_as_a_text_parameter():
    text = (ROOT / "notebooks" / "r-data-analysis.ipynb").read_text()
    found = notebook_parameters(text, "r-data-analysis.ipynb")
    assert found == [Parameter("formula_text", "str", '"mpg ~ wt + hp"', "")]
    assert spans(found) == [(2, 2)]


def test_r_literals_give_their_types():
    cell = "\n".join(
        [
            "# Parameters",
            'formula_text <- "mpg ~ wt + hp"  # the model',
            "n_trees = 500L",
            "rate <<- 2.5",
            "folds <- 5",
            "small <- -1e-3",
            "name = 'x # not a comment'",
            "verbose <- TRUE",
            "quick <- F",
            "seed <- NULL",
            'columns <- c("mpg", "wt",',
            "             TRUE)  # which",
            "empty <- list()",
            "named <- c(a = 1)",
            "now <- Sys.time()",
            "if (verbose) {",
            "  hidden <- 1",
            "}",
            "library(stats)",
        ]
    )
    found = parameters(cell, "a.ipynb", "r")
    assert found == [
        Parameter("formula_text", "str", '"mpg ~ wt + hp"', "the model"),
        Parameter("n_trees", "int", "500L", ""),
        Parameter("rate", "float", "2.5", ""),
        Parameter("folds", "float", "5", ""),
        Parameter("small", "float", "-1e-3", ""),
        Parameter("name", "str", "'x # not a comment'", ""),
        Parameter("verbose", "bool", "TRUE", ""),
        Parameter("quick", "bool", "F", ""),
        Parameter("seed", "None", "NULL", ""),
        Parameter("columns", "list", 'c("mpg", "wt",\n             TRUE)', "which"),
        Parameter("empty", "list", "list()", ""),
        Parameter("named", "expression", "c(a = 1)", ""),
        Parameter("now", "expression", "Sys.time()", ""),
    ]
    assert spans(found)[9:11] == [(11, 12), (13, 13)]


def test_an_r_value_that_never_closes_is_its_first_line_as_an_expression_and_ends_the_reading():
    assert parameters('n <- 1\na <- c(1,\nb <- "x"', "a.ipynb", "r") == [
        Parameter("n", "float", "1", ""),
        Parameter("a", "expression", "c(1,", ""),
    ]


def test_a_cell_of_unclosed_brackets_is_read_in_one_pass(monkeypatch):
    # every line scanned to the cell's end again took the hub 82 s of CPU for 60 KiB of `a <- (` lines
    scans = []
    real = scanner.value_end
    monkeypatch.setattr(scanner, "value_end", lambda *a: scans.append(a[1]) or real(*a))
    assert [p.name for p in parameters("a <- (\n" * 8000, "a.ipynb", "r")] == ["a"]
    assert scans == [0]  # one scan, from the first line to the end


@pytest.mark.parametrize(
    "language, cell, expected",
    [
        (
            "julia",
            'epochs = 10  # passes\nrate::Float64 = 0.1\nname = "x"\nlayers = [64,\n  32]\nflag = true\nf = sqrt(2)',
            [
                Parameter("epochs", "int", "10", "passes"),
                Parameter("rate", "float", "0.1", ""),
                Parameter("name", "str", '"x"', ""),
                Parameter("layers", "list", "[64,\n  32]", ""),
                Parameter("flag", "bool", "true", ""),
                Parameter("f", "expression", "sqrt(2)", ""),
            ],
        ),
        ("matlab", "epochs = 10;  % passes\nname = 'x';", [
            Parameter("epochs", "int", "10", "passes"), Parameter("name", "str", "'x'", "")]),
        ("scala", 'val rate: Double = 0.1 // step\nvar m = {"a": null}', [
            Parameter("rate", "float", "0.1", "step"), Parameter("m", "dict", '{"a": null}', "")]),
        ("bash", "EPOCHS=10\nexport NAME='x'  # who\nN=$((1 + 2))\n[ x == y ]", [
            Parameter("EPOCHS", "int", "10", ""), Parameter("NAME", "str", "'x'", "who"),
            Parameter("N", "expression", "$((1 + 2))", "")]),
    ],
)  # fmt: skip
def test_other_languages_read_name_equals_a_json_literal(language, cell, expected):
    assert parameters(cell, "a.ipynb", language) == expected


def test_python_cells_read_as_before_with_where_each_assignment_is():
    cell = 'lr = 0.01  # learning rate\nname: str = "é"  # who\nlayers = [\n    1,\n]\nx = f()\nlr = 0.1'
    found = parameters(cell, "a.ipynb")
    assert found == [
        Parameter("lr", "float", "0.1", ""),
        Parameter("name", "str", '"é"', "who"),
        Parameter("layers", "list", "[\n    1,\n]", ""),
        Parameter("x", "expression", "f()", ""),
    ]
    assert spans(found) == [(7, 7), (2, 2), (3, 5), (6, 6)]
    assert found[0].to_dict() == {"name": "lr", "type": "float", "default": "0.1", "help": ""}
    with pytest.raises(NotRunnable, match="not valid Python"):
        parameters("lr = (", "a.ipynb", "python")


@pytest.mark.parametrize(
    "metadata, language",
    [
        (R_META, "r"),
        ({"language_info": {"name": "julia"}}, "julia"),
        ({"kernelspec": {"name": "x"}, "language_info": {"name": "Python"}}, "python"),
        ({}, "python"),
        ({"kernelspec": "broken"}, "python"),
    ],
)
def test_the_language_comes_from_the_kernelspec_else_the_language_info(metadata, language):
    assert language_of(a_notebook("", metadata)) == language


def test_a_value_is_checked_with_words_naming_the_parameter_and_its_default():
    rate = Parameter("rate", "float", "2.5", "")
    assert check_value("rate", 3, rate) == 3.0
    with pytest.raises(ValueError) as refused:
        check_value("rate", "fast", rate)
    assert str(refused.value) == 'parameters: rate must be a number (its default is 2.5), not "fast".'


# --- rewriting ----------------------------------------------------------------------------
def test_a_python_rewrite_changes_the_values_only():
    cell = 'lr: float = 0.01  # learning rate\nname = "é"; epochs = 3\nlayers = [\n    1,\n]\nprint(lr)'
    new = rewrite(cell, {"lr": "0.5", "epochs": "10", "layers": "[2, 3]"}, "python", "a.ipynb")
    assert new == 'lr: float = 0.5  # learning rate\nname = "é"; epochs = 10\nlayers = [2, 3]\nprint(lr)'


def test_an_r_rewrite_keeps_each_operator_and_comment():
    cell = 'formula_text <- "mpg ~ wt + hp"  # the model\nn = 5L\ncols <<- c("a",\n  "b") # which\nplot(n)'
    new = rewrite(cell, {"formula_text": '"mpg ~ wt"', "cols": 'list("c")', "n": "7L"}, "r", "a.ipynb")
    assert new == 'formula_text <- "mpg ~ wt"  # the model\nn = 7L\ncols <<- list("c") # which\nplot(n)'


def test_a_rewrite_of_a_name_the_cell_does_not_assign_is_refused():
    with pytest.raises(ValueError) as refused:
        rewrite("a <- 1\nb <- 2", {"c": "3"}, "r", "a.ipynb")
    assert str(refused.value) == "parameters: the parameters cell of a.ipynb does not assign 'c'; it assigns a, b."


# --- "Make this the notebook's defaults" ------------------------------------------------------
@pytest.fixture
def a_home(tmp_path):
    (tmp_path / "work").mkdir()
    return tmp_path


def write(home: Path, path: str, notebook: dict) -> None:
    (home / path).write_text(json.dumps(notebook))


def cells(home: Path, path: str) -> list[str]:
    return ["".join(cell["source"]) for cell in json.loads((home / path).read_text())["cells"]]


async def test_the_copy_lies_beside_the_notebook_with_the_values_in_its_language(a_home):
    contents = AsyncLargeFileManager(root_dir=str(a_home))
    write(a_home, "work/train.ipynb", a_notebook("lr = 0.01  # rate\nepochs = 3", PY_META))
    write(a_home, "work/model.ipynb", a_notebook('formula_text <- "mpg ~ wt"\nn <- 5L  # trees', R_META))

    assert await make_defaults(contents, "work/train.ipynb", {"lr": 0.1, "epochs": 9}) == "work/train-best.ipynb"
    assert await make_defaults(contents, "work/train.ipynb", {"lr": 1}) == "work/train-best-2.ipynb"
    assert await make_defaults(contents, "work/model.ipynb", {"formula_text": "y ~ x", "n": 7}) == (
        "work/model-best.ipynb"
    )

    assert cells(a_home, "work/train-best.ipynb") == ["# Title", "lr = 0.1  # rate\nepochs = 9", "print(lr)"]
    assert cells(a_home, "work/train-best-2.ipynb")[1] == "lr = 1.0  # rate\nepochs = 3"
    assert cells(a_home, "work/model-best.ipynb")[1] == 'formula_text <- "y ~ x"\nn <- 7L  # trees'
    assert cells(a_home, "work/train.ipynb")[1] == "lr = 0.01  # rate\nepochs = 3"  # the notebook itself is untouched
    copy = json.loads((a_home / "work/train-best.ipynb").read_text())
    assert copy["cells"][2]["outputs"][0]["text"] == ["0.01\n"]  # a copy: its outputs too


@pytest.mark.parametrize(
    "path, values, words",
    [
        ("../x.ipynb", {"lr": 1}, "../x.ipynb is outside your home"),
        ("/etc/x.ipynb", {"lr": 1}, "/etc/x.ipynb is outside your home"),
        ("work/train.py", {"lr": 1}, "path must be a notebook (.ipynb) in your home"),
        ("work/none.ipynb", {"lr": 1}, "There is no notebook work/none.ipynb in your home"),
        ("work/plain.ipynb", {"lr": 1}, 'work/plain.ipynb has no parameters cell (a code cell tagged "parameters")'),
        ("work/train.ipynb", {"zz": 1}, "work/train.ipynb has no parameter 'zz'; its parameters are lr, epochs."),
        ("work/train.ipynb", {"epochs": 1.5}, "epochs must be a whole number (its default is 3), not 1.5."),
        ("work/train.ipynb", {}, "choose at least one value"),
    ],
)
async def test_what_cannot_be_copied_says_why(a_home, path, values, words):
    contents = AsyncLargeFileManager(root_dir=str(a_home))
    write(a_home, "work/train.ipynb", a_notebook("lr = 0.01\nepochs = 3", PY_META))
    write(a_home, "work/plain.ipynb", a_notebook("lr = 0.01", PY_META, tags=()))
    with pytest.raises(ValueError) as refused:
        await make_defaults(contents, path, values)
    assert words in str(refused.value)
    assert sorted(p.name for p in (a_home / "work").iterdir()) == ["plain.ipynb", "train.ipynb"]


def test_the_copys_names_never_leave_the_notebooks_folder():
    assert list(copy_names(checked_path("work/a.b.ipynb")))[:3] == [
        "work/a.b-best.ipynb",
        "work/a.b-best-2.ipynb",
        "work/a.b-best-3.ipynb",
    ]


@pytest.mark.parametrize(
    "pattern, text",
    [
        (r._NUMBER.fullmatch, lambda n: "1" * n + "x"),  # `\d+\.?\d*` read each digit two ways: minutes at 64 KiB
        (generic.ASSIGNMENT.match, lambda n: "x:a" + " " * n + "!"),  # a type whose blanks matched two ways
        (generic.ASSIGNMENT.match, lambda n: "x" + " " * n + "y"),  # blanks before and after an absent type
    ],
)
def test_the_readers_patterns_read_a_text_one_way(pattern, text):
    # The hub parses every user's cell; a pattern that backtracks holds the interpreter for everyone.  Compared,
    # not timed against a clock: ten times the text costs about ten times more (the old patterns ~100 times).
    # The cheapest of five tries at each size: one try could be a moment the machine gave to something else (a run
    # of the suite on a busy machine measured 44 ms once for a read that takes 0.2 ms)
    costs = []
    for n in (2_000, 20_000):
        given = text(n)
        tries = []
        for _ in range(5):
            started = time.perf_counter_ns()
            pattern(given)
            tries.append(time.perf_counter_ns() - started)
        costs.append(min(tries))
    assert costs[1] < 40 * max(costs[0], 1_000_000)  # linear: well under a millisecond; the old ones took seconds
