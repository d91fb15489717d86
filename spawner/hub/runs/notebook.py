"""A notebook's papermill parameters, read from its text (pure; hub side).

The cell tagged "parameters" holds assignments (`lr = 0.01  # learning rate`);
each becomes a typed field in JupyterLab's dialog and a value papermill
injects.  Read with Python's `ast`, not papermill's own inspection: importing
papermill costs the hub's event loop two seconds (nbclient, its engines), and
papermill infers a type only from an annotation, never from the default.
"""

from __future__ import annotations

import ast
import io
import json
import tokenize
from dataclasses import asdict, dataclass

PARAMETERS_TAG = "parameters"
# The type names JupyterLab's dialog knows; any other default (an expression) takes any JSON value.
_TYPES = {bool: "bool", int: "int", float: "float", str: "str", list: "list", dict: "dict", type(None): "None"}
_ANNOTATIONS = {"bool", "int", "float", "str", "list", "dict"}
MAX_CELL = 64 * 1024  # bytes of a parameters cell the hub reads (parsing runs in the hub)
MAX_PARAMETERS = 200
MAX_VALUES = 32 * 1024  # bytes of the user's values as JSON (they travel in the job script and the hub's record)


class NotRunnable(ValueError):
    """The file cannot run as a job; str(e) says why and what to do."""


@dataclass(frozen=True)
class Parameter:
    name: str
    type: str  # "int", "float", "bool", "str", "list", "dict", "None" or "expression"
    default: str  # the default as written in the notebook
    help: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


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


def parameters_cell(notebook: dict) -> str | None:
    """The source of the first code cell tagged "parameters", None if there is none."""
    for cell in notebook["cells"]:
        tags = cell.get("metadata", {}).get("tags", []) if isinstance(cell, dict) else []
        if isinstance(cell, dict) and cell.get("cell_type") == "code" and PARAMETERS_TAG in tags:
            return _source(cell)
    return None


def _comments(source: str) -> dict[int, str]:
    """Line number -> the comment on it (a parameter's help)."""
    found = {}
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.COMMENT:
                found[token.start[0]] = token.string.lstrip("#").strip()
    except (tokenize.TokenError, SyntaxError):
        pass
    return found


def _type_of(node: ast.expr, annotation: ast.expr | None) -> str:
    if isinstance(annotation, ast.Name) and annotation.id in _ANNOTATIONS:
        return annotation.id
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return "expression"
    return _TYPES.get(type(value), "expression")


def _segment(lines: list[str], node: ast.expr) -> str:
    """The source text of `node` (ast.get_source_segment splits the whole source again for every call)."""
    if node.end_lineno is None or node.end_col_offset is None:
        return ""
    if node.lineno == node.end_lineno:
        return lines[node.lineno - 1][node.col_offset : node.end_col_offset]
    first = lines[node.lineno - 1][node.col_offset :]
    middle = lines[node.lineno : node.end_lineno - 1]
    return "\n".join([first, *middle, lines[node.end_lineno - 1][: node.end_col_offset]])


def parameters(source: str, path: str) -> list[Parameter]:
    """The assignments of a parameters cell, in order; NotRunnable when the cell is not Python or too big.

    The hub parses it for everyone: its size and its number of parameters are bounded, and a cell that
    nests too deeply is refused, never a hub error.
    """
    if len(source.encode()) > MAX_CELL:
        raise NotRunnable(f"{path}: its parameters cell is larger than {MAX_CELL // 1024} KiB; keep data out of it.")
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        raise NotRunnable(f"{path}: its parameters cell is not valid Python (line {e.lineno}: {e.msg}).") from None
    except (RecursionError, MemoryError, ValueError):
        raise NotRunnable(f"{path}: its parameters cell nests too deeply to read.") from None
    comments = _comments(source)
    lines = source.split("\n")
    found: dict[str, Parameter] = {}
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target, annotation = statement.targets[0], None
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            target, annotation = statement.target, statement.annotation
        else:
            continue
        if not isinstance(target, ast.Name):
            continue
        found[target.id] = Parameter(
            name=target.id,
            type=_type_of(statement.value, annotation),
            default=_segment(lines, statement.value)[:200],
            help=comments.get(statement.end_lineno or statement.lineno, "")[:200],
        )
        if len(found) > MAX_PARAMETERS:
            raise NotRunnable(f"{path}: its parameters cell has more than {MAX_PARAMETERS} parameters.")
    return list(found.values())


def notebook_parameters(text: str, path: str) -> list[Parameter]:
    """A notebook file's text -> its parameters ([] when it has no parameters cell)."""
    source = parameters_cell(read_notebook(text, path))
    return parameters(source, path) if source is not None else []


def _fits(kind: str, value: object) -> bool:
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "float":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "str":
        return isinstance(value, str)
    if kind == "list":
        return isinstance(value, list)
    if kind == "dict":
        return isinstance(value, dict)
    return True  # "None", "expression": any JSON value


_WORDS = {
    "int": "a whole number",
    "float": "a number",
    "bool": "true or false",
    "str": "a text",
    "list": "a list",
    "dict": "a mapping",
}


def check_values(values: object, declared: list[Parameter], path: str) -> dict:
    """The user's parameter values, each checked against the notebook's declaration (a ValueError says
    which and why).  Values are JSON: papermill writes them into the notebook as Python literals."""
    if values is None:
        return {}
    if not isinstance(values, dict):
        raise ValueError('parameters must be a JSON object such as {"lr": 0.1}.')
    if len(json.dumps(values)) > MAX_VALUES:
        raise ValueError(
            f"parameters: at most {MAX_VALUES // 1024} KiB of values; put data in a file and pass its name."
        )
    by_name = {p.name: p for p in declared}
    if values and not by_name:
        raise ValueError(f'{path} has no parameters cell (a code cell tagged "parameters"), so it takes no parameters.')
    checked = {}
    for name, value in values.items():
        if name not in by_name:
            raise ValueError(f"parameters: {path} has no parameter {name!r}; its parameters are {', '.join(by_name)}.")
        kind = by_name[name].type
        if not _fits(kind, value):
            raise ValueError(
                f"parameters: {name} must be {_WORDS[kind]} (its default is {by_name[name].default}), "
                f"not {json.dumps(value)[:60]}."
            )
        if kind == "float" and isinstance(value, int):
            value = float(value)
        checked[name] = value
    return checked
