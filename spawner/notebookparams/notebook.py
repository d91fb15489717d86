"""A notebook's parameters cell, read in the notebook's own language.

The language is the notebook's metadata `kernelspec.language`, else
`language_info.name`, else Python: Python's cell is read with `ast`
(python.py), R's line by line (r.py), any other language's as `name = value`
lines (generic.py).
"""

from __future__ import annotations

import json

from . import generic, python, r
from .model import MAX_CELL, PARAMETERS_TAG, Assignment, NotRunnable, Parameter


def read_notebook(text: str, path: str) -> dict:
    """The notebook's JSON; NotRunnable when it is none (a half-written file, another format)."""
    try:
        notebook = json.loads(text)
    except RecursionError:
        raise NotRunnable(f"{path} is not a valid notebook: it nests too deeply.") from None
    except ValueError as e:
        raise NotRunnable(
            f"{path} is not a valid notebook: it is not JSON ({e}). Open it in JupyterLab and save it again."
        ) from None
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        raise NotRunnable(f"{path} is not a valid notebook: it has no list of cells.")
    if notebook.get("nbformat", 0) < 4:
        raise NotRunnable(
            f"{path} is an old notebook (format {notebook.get('nbformat')}); open and save it in JupyterLab first."
        )
    return notebook


def _source(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def parameters_index(notebook: dict) -> int | None:
    """The index of the first code cell tagged "parameters", None if there is none."""
    for index, cell in enumerate(notebook["cells"]):
        metadata = cell.get("metadata") if isinstance(cell, dict) else None
        tags = metadata.get("tags") if isinstance(metadata, dict) else None
        if isinstance(tags, list) and cell.get("cell_type") == "code" and PARAMETERS_TAG in tags:
            return index
    return None


def parameters_cell(notebook: dict) -> str | None:
    """The source of the first code cell tagged "parameters", None if there is none."""
    index = parameters_index(notebook)
    return _source(notebook["cells"][index]) if index is not None else None


def language_of(notebook: dict) -> str:
    """The notebook's language, lower case ("python", "r", "julia", ...)."""
    metadata = notebook.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    for key, field in (("kernelspec", "language"), ("language_info", "name")):
        section = metadata.get(key)
        value = section.get(field) if isinstance(section, dict) else None
        if isinstance(value, str) and value.strip():
            return value.strip().lower()
    return "python"


def assignments(source: str, path: str, language: str = "python") -> list[Assignment]:
    """The parameters cell's assignments and where their values lie; NotRunnable when the cell is too big
    (or, in Python, not valid).  The hub reads it for everyone: its size and its number of parameters are
    bounded, and a cell that nests too deeply is refused, never a hub error."""
    if len(source.encode()) > MAX_CELL:
        raise NotRunnable(f"{path}: its parameters cell is larger than {MAX_CELL // 1024} KiB; keep data out of it.")
    if language.startswith("python"):
        return python.assignments(source, path)
    if language == "r":
        return r.assignments(source, path)
    return generic.assignments(source, path, language)


def parameters(source: str, path: str, language: str = "python") -> list[Parameter]:
    """The assignments of a parameters cell, in order, as typed parameters."""
    return [found.parameter for found in assignments(source, path, language)]


def notebook_parameters(text: str, path: str) -> list[Parameter]:
    """A notebook file's text -> its parameters ([] when it has no parameters cell)."""
    notebook = read_notebook(text, path)
    source = parameters_cell(notebook)
    return parameters(source, path, language_of(notebook)) if source is not None else []
