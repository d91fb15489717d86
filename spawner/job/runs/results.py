"""A sweep task's results: what the notebook records, written where the hub's table reads it (compute node, as the user).

The documented way: a code cell tagged "results" assigns a dict named
`results` (Python `results = {"accuracy": acc}`, R `results <- list(accuracy = acc)`).
The runner puts one cell of its own after it, in the notebook's language,
that writes `results` as one JSON line to the task's results file
(contract.sweep_results): {"task": 4, "results": {...}}, or {"task": 4,
"error": "why not"} when the value cannot be recorded.  The runner then adds
how the task failed, if it did.  Values are numbers, texts, booleans or
null (NaN and infinities become null); at most SWEEP_RESULTS_BYTES.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ...contract import SWEEP_RESULTS_BYTES

RESULTS_TAG = "results"
INJECTED_TAG = "dsportal-results"

# The Python cell, self-contained (json, math, os): the kernel may lack the portal's package (a container or module
# kernel), and a folder named like it beside the notebook would come first on the kernel's path.
PYTHON_RECORDER = """\
# DS Portal: this task's results, for the sweep's table
def _dsportal_record(value, task, path, limit):
    import json, math, os

    def scalar(name, v):
        if hasattr(v, "item") and callable(v.item):  # NumPy numbers, one-element tensors
            try:
                v = v.item()
            except Exception:
                pass
        if v is None or isinstance(v, (bool, str)):
            return v
        if isinstance(v, (int, float)):
            return v if math.isfinite(v) else None
        raise TypeError(f"results[{name!r}] is {type(v).__name__}; record numbers, texts or booleans")

    if not isinstance(value, dict):
        what = "assigns no dict named results" if value is None else f"assigns results a {type(value).__name__}"
        line = {"task": task, "error": f'the cell tagged "results" {what}, not a dict of names and values'}
    else:
        try:
            line = {"task": task, "results": {str(k): scalar(str(k), v) for k, v in value.items()}}
        except TypeError as e:
            line = {"task": task, "error": f"results is not JSON-able: {e}"}
        if len(json.dumps(line)) > limit - 64:
            line = {"task": task, "error": f"results is larger than {limit // 1024} KiB; record fewer values"}
    partial = f"{path}.{os.getpid()}"
    with open(partial, "w") as out:
        out.write(json.dumps(line) + "\\n")
    os.replace(partial, path)
    if "error" in line:
        print(f"DS Portal: the results of task {task} are not recorded: {line['error']}.")

"""


def write_line(path: str, line: dict) -> None:
    """Replace the results file with `line` (written beside it, then renamed: the hub never reads half a line)."""
    folder = Path(path).parent
    folder.mkdir(parents=True, exist_ok=True)
    partial = folder / f".{Path(path).name}.{os.getpid()}"
    partial.write_text(json.dumps(line) + "\n")
    partial.replace(path)


def python_cell(task: int, path: str) -> str:
    call = f"_dsportal_record(globals().get('results'), {task}, {path!r}, {SWEEP_RESULTS_BYTES})"
    return f"{PYTHON_RECORDER}\n\n{call}\ndel _dsportal_record"


def r_cell(task: int, path: str) -> str:
    quoted = json.dumps(path)  # a JSON string is an R string literal for the paths the portal writes
    return f"""# DS Portal: this task's results, for the sweep's table
local({{
  value <- if (exists("results")) get("results") else NULL
  line <- if (is.list(value) && length(value) > 0 && !is.null(names(value))) {{
    tryCatch(
      jsonlite::toJSON(list(task = {task}L, results = value), auto_unbox = TRUE, na = "null", digits = NA),
      error = function(e) jsonlite::toJSON(list(task = {task}L, error = paste("results is not JSON-able:",
        conditionMessage(e))), auto_unbox = TRUE))
  }} else {{
    jsonlite::toJSON(list(task = {task}L, error = "the cell tagged \\"results\\" assigns no named list results"),
      auto_unbox = TRUE)
  }}
  writeLines(line, {quoted})
}})"""


CELLS = {"python": python_cell, "r": r_cell}


def language(notebook: dict) -> str:
    metadata = notebook.get("metadata", {})
    return str(metadata.get("kernelspec", {}).get("language") or metadata.get("language_info", {}).get("name") or "")


def add_results_cell(notebook, task: int, path: str) -> bool:
    """Put the recording cell after the first cell tagged "results" (nbformat's NotebookNode, changed in place);
    False when there is none, or the notebook's language has no recorder."""
    make = CELLS.get(language(notebook).lower())
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type == "code" and RESULTS_TAG in cell.get("metadata", {}).get("tags", []):
            if make is None:
                return False
            import nbformat  # noqa: PLC0415  (only notebook runs load it)

            injected = nbformat.v4.new_code_cell(make(task, path), metadata={"tags": [INJECTED_TAG]})
            notebook.cells.insert(index + 1, injected)
            return True
    return False


def add_failure(path: str, task: int, words: str) -> None:
    """Add how the task failed to what the notebook recorded (or to nothing)."""
    try:
        line = json.loads(Path(path).read_text()[:SWEEP_RESULTS_BYTES])
        if not isinstance(line, dict):
            line = {"task": task}
    except (OSError, ValueError):
        line = {"task": task}
    line["failed"] = words[:500]
    write_line(path, line)
