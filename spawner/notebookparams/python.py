"""The parameters cell of a Python notebook, read with Python's `ast`.

Not papermill's own inspection: importing papermill costs the hub's event loop
two seconds (nbclient, its engines), and papermill infers a type only from an
annotation, never from the default.  An assignment (`lr = 0.01`) or an
annotated one (`lr: float = 0.01`) to a plain name is a parameter; its type is
the annotation's, else the literal's, else "expression"; its help is the
comment on its last line.
"""

from __future__ import annotations

import ast
import io
import tokenize

from .model import MAX_PARAMETERS, MAX_TEXT, Assignment, NotRunnable, Parameter, too_many

# The type names JupyterLab's dialog knows; any other default (an expression) takes any JSON value.
_TYPES = {bool: "bool", int: "int", float: "float", str: "str", list: "list", dict: "dict", type(None): "None"}
_ANNOTATIONS = {"bool", "int", "float", "str", "list", "dict"}


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


def _column(line: str, offset: int) -> int:
    """ast's column (UTF-8 bytes) -> characters."""
    return len(line.encode()[:offset].decode(errors="ignore"))


def _span(lines: list[str], node: ast.expr) -> tuple[tuple[int, int], tuple[int, int]]:
    first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1
    end = node.end_col_offset if node.end_col_offset is not None else len(lines[last].encode())
    return (first, _column(lines[first], node.col_offset)), (last, _column(lines[last], end))


def _segment(lines: list[str], start: tuple[int, int], end: tuple[int, int]) -> str:
    """The text between two (line, column) places (ast.get_source_segment splits the whole source again each call)."""
    if start[0] == end[0]:
        return lines[start[0]][start[1] : end[1]]
    return "\n".join([lines[start[0]][start[1] :], *lines[start[0] + 1 : end[0]], lines[end[0]][: end[1]]])


def _parse(source: str, path: str) -> ast.Module:
    try:
        return ast.parse(source)
    except SyntaxError as e:
        raise NotRunnable(f"{path}: its parameters cell is not valid Python (line {e.lineno}: {e.msg}).") from None
    except (RecursionError, MemoryError, ValueError):
        raise NotRunnable(f"{path}: its parameters cell nests too deeply to read.") from None


def assignments(source: str, path: str) -> list[Assignment]:
    """The cell's assignments to plain names, in order (a name assigned twice: its last one, where it was first)."""
    tree = _parse(source, path)
    comments = _comments(source)
    lines = source.split("\n")
    found: dict[str, Assignment] = {}
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target, annotation = statement.targets[0], None
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            target, annotation = statement.target, statement.annotation
        else:
            continue
        if not isinstance(target, ast.Name):
            continue
        start, end = _span(lines, statement.value)
        last_line = statement.end_lineno or statement.lineno
        parameter = Parameter(
            name=target.id,
            type=_type_of(statement.value, annotation),
            default=_segment(lines, start, end)[:MAX_TEXT],
            help=comments.get(last_line, "")[:MAX_TEXT],
            line=statement.lineno,
            end_line=last_line,
        )
        found[target.id] = Assignment(parameter, start, end)
        if len(found) > MAX_PARAMETERS:
            raise too_many(path)
    return list(found.values())
