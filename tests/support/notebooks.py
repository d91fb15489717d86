"""Running the template notebooks headless with papermill, and how long each took (shown at the end of the run)."""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
TRAINING = ["tensorflow-mnist.ipynb", "pytorch-mnist.ipynb", "multi-gpu-pytorch.ipynb"]
STEP_LINE = re.compile(r"^Epoch \d+ Global Step \d+, Training Accuracy [01]\.\d{4}$")
TIMINGS: dict[str, float] = {}


def run(name: str, workdir: Path, **parameters) -> str:
    """Execute notebook `name` in `workdir`; return all its text output."""
    import papermill  # here, not at the top: every pytest process imports this module (conftest), few run notebooks

    for extra in NOTEBOOKS.glob("*.py"):
        shutil.copy(extra, workdir)
    started = time.monotonic()
    out = papermill.execute_notebook(
        str(NOTEBOOKS / name),
        str(workdir / f"out-{name}"),
        parameters=parameters,
        cwd=str(workdir),
        progress_bar=False,
        kernel_name=None,
    )
    TIMINGS[name] = time.monotonic() - started
    text = []
    for cell in out["cells"]:
        for output in cell.get("outputs", []):
            text.append(
                output.get("text", "") if isinstance(output.get("text"), str) else "".join(output.get("text", []))
            )
            data = output.get("data", {}).get("text/plain")
            if data:
                text.append(data if isinstance(data, str) else "".join(data))
    return "".join(text)
