""" "Make this the notebook's defaults": a copy of a notebook whose parameters cell carries chosen values
(the user's Jupyter server, as the user).

    POST {base}dsportal/runs/defaults  {"path": "work/train.ipynb", "parameters": {"learning_rate": 0.01}}
         -> 201 {"path": "work/train-best.ipynb"}

The path is relative to the server's root (the user's home).  The copy lies
beside the notebook, STEM-best.ipynb (then STEM-best-2.ipynb, -3, ...: never
over a file).  In its parameters cell only the values of the named
assignments change, written in the notebook's language by papermill's
translators, as papermill writes a run's values; every other line and cell,
outputs included, is the notebook's.  Read and saved through Jupyter's contents
manager, as JupyterLab's own saves.  A refusal is 400 {"message": "..."},
shown to the user as is.  The reading and rewriting are spawner/notebookparams/.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import PurePosixPath

from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import ensure_async
from tornado import web

from ...notebookparams import (
    Parameter,
    check_values,
    language_of,
    parameters,
    parameters_index,
    rewrite,
)

ROUTE = "runs/defaults"
SUFFIX = "-best"
MAX_COPIES = 1000  # STEM-best-1000.ipynb at most: beyond, the user is asked to tidy up
EXAMPLE = '{"path": "work/train.ipynb", "parameters": {"learning_rate": 0.01}}'


def checked_path(path: object) -> PurePosixPath:
    """The notebook's path relative to the home; a ValueError when it is no notebook or outside the home."""
    if not isinstance(path, str) or not path.endswith(".ipynb"):
        raise ValueError(f"path must be a notebook (.ipynb) in your home, such as {EXAMPLE}.")
    relative = PurePosixPath(path)
    if relative.is_absolute() or ".." in relative.parts or "\\" in path:
        raise ValueError(
            f"{path} is outside your home: give the notebook's path from your home, e.g. work/train.ipynb."
        )
    return relative


def copy_names(path: PurePosixPath):
    """work/train.ipynb -> work/train-best.ipynb, work/train-best-2.ipynb, ... (MAX_COPIES of them)."""
    for n in range(1, MAX_COPIES + 1):
        yield str(path.with_name(f"{path.stem}{SUFFIX}{'' if n == 1 else f'-{n}'}{path.suffix}"))


def rendered_values(values: dict, declared: list[Parameter], notebook: dict, language: str) -> dict[str, str]:
    """Each value written in the notebook's language by papermill (imported here: it takes seconds)."""
    from papermill.exceptions import PapermillException
    from papermill.translators import papermill_translators

    kernelspec = notebook.get("metadata", {}).get("kernelspec", {})
    kernel = kernelspec.get("name", "") if isinstance(kernelspec, dict) else ""
    try:
        translator = papermill_translators.find_translator(kernel, "R" if language == "r" else language)
    except PapermillException:
        raise ValueError(f"papermill cannot write values in {language}; change the parameters cell by hand.") from None
    types = {p.name: p.type for p in declared}
    # R's whole numbers are doubles unless written 5L: keep an "int" parameter one
    suffix = {name: "L" if language == "r" and types[name] == "int" else "" for name in values}
    return {name: translator.translate(value) + suffix[name] for name, value in values.items()}


async def _free_name(contents, path: PurePosixPath) -> str:
    # a check then a save: two copies made at the same moment could meet; one user's clicks, so let them
    for name in copy_names(path):
        if not await ensure_async(contents.exists(name)):
            return name
    raise ValueError(f"{path.parent}/ already holds {MAX_COPIES} copies of {path.name}; delete some first.")


async def make_defaults(contents, path: object, values: object) -> str:
    """Save a copy of the notebook at `path` with `values` in its parameters cell; its path.  A ValueError says
    why not (no such notebook, no parameters cell, a name it does not assign, a value of the wrong type)."""
    notebook_path = checked_path(path)
    if not await ensure_async(contents.file_exists(str(notebook_path))):
        raise ValueError(f"There is no notebook {notebook_path} in your home; save it first.")
    model = await ensure_async(contents.get(str(notebook_path), content=True, type="notebook"))
    notebook = model["content"]
    index = parameters_index(notebook)
    if index is None:
        raise ValueError(
            f'{notebook_path} has no parameters cell (a code cell tagged "parameters"); tag one in JupyterLab first.'
        )
    cell = notebook["cells"][index]
    source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
    language = language_of(notebook)
    declared = parameters(source, str(notebook_path), language)
    checked = check_values(values, declared, str(notebook_path))
    if not checked:
        raise ValueError(f"parameters: choose at least one value, such as {EXAMPLE}.")
    rendered = await asyncio.to_thread(rendered_values, checked, declared, notebook, language)
    cell["source"] = rewrite(source, rendered, language, str(notebook_path))
    target = await _free_name(contents, notebook_path)
    await ensure_async(contents.save({"type": "notebook", "format": "json", "content": notebook}, target))
    return target


class DefaultsHandler(APIHandler):
    @web.authenticated
    async def post(self):
        body = self.get_json_body()
        if not isinstance(body, dict) or set(body) != {"path", "parameters"}:
            raise web.HTTPError(400, f"Send {EXAMPLE}.")
        try:
            created = await make_defaults(self.contents_manager, body["path"], body["parameters"])
        except ValueError as e:
            raise web.HTTPError(400, str(e)) from None
        self.set_status(201)
        self.finish(json.dumps({"path": created}))
