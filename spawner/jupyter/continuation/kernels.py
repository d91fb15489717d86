"""The session's kernels carried out: each open notebook's kernel writes its variables (the user's server).

For every kernel of a notebook of this session, the code of spawner/job/continuation/carry.py runs inside that
kernel (a Python kernel's `dump`, an R kernel's `save`), each into its own private folder, and the manifest
(notebook path -> kernel language, folder, report) is written beside them for the session that continues this
one.  A kernel that is busy (a cell still running) answers when its cell ends, or not within the time allowed:
its variables are then not carried, and the manifest says so.  A kernel of another language, or one that cannot
import the portal's code (a container kernel), is named as not carried.
"""

from __future__ import annotations

from pathlib import Path

from ...job.continuation.carry import R_FILE, R_REPORT, private_folder, r_dump_code, r_load_code, r_report
from ...job.ownership import mine_alone, read_private_json, write_private_json

PYTHON_DUMP = """import json as _dsportal_json
from pathlib import Path as _dsportal_path
from spawner.job.continuation.carry import dump as _dsportal_dump
print({mark!r}, _dsportal_json.dumps(_dsportal_dump(get_ipython().user_ns, _dsportal_path({folder!r}), {most}, {seconds})))
del _dsportal_json, _dsportal_path, _dsportal_dump
"""
PYTHON_LOAD = """import json as _dsportal_json
from pathlib import Path as _dsportal_path
from spawner.job.continuation.carry import load as _dsportal_load
print({mark!r}, _dsportal_json.dumps(_dsportal_load(get_ipython().user_ns, _dsportal_path({folder!r}))))
del _dsportal_json, _dsportal_path, _dsportal_load
"""
MANIFEST = "kernels.json"


def dump_code(language: str, folder: Path, max_bytes: int, seconds: float) -> str | None:
    """The code a kernel of `language` runs to write its variables into `folder` (None: no way for it)."""
    if language == "python":
        return PYTHON_DUMP.format(mark=R_REPORT, folder=str(folder), most=max_bytes, seconds=seconds)
    if language == "R":
        return r_dump_code(folder, max_bytes)
    return None


async def run_in_kernel(kernel, code: str, timeout: float) -> str:
    """What `code` printed in the kernel (jupyter_client's own client of the server's kernel); TimeoutError when
    the kernel did not finish within `timeout` (a cell of the user's still running)."""
    client = kernel.client()
    client.start_channels()
    printed: list[str] = []
    try:
        await client.wait_for_ready(timeout=timeout)
        await client.execute_interactive(
            code,
            store_history=False,
            timeout=timeout,
            output_hook=lambda msg: printed.append(msg["content"].get("text", "")),
        )
    finally:
        client.stop_channels()
    return "".join(printed)


async def carry_out(kernels, sessions: list[dict], base: Path, max_bytes: int, seconds: float) -> dict:
    """Each notebook's kernel (`sessions`: jupyter_server's session list) writes its variables under `base`;
    -> the manifest {notebook path: {"language", "folder", "report"}}, also written to base/kernels.json."""
    private_folder(base)
    manifest: dict[str, dict] = {}
    for number, session in enumerate(s for s in sessions if s.get("kernel") and s.get("path")):
        kernel = kernels.get_kernel(session["kernel"]["id"])
        language = getattr(getattr(kernel, "kernel_spec", None), "language", "") or ""
        folder = base / f"kernel-{number}"
        code = dump_code(language, folder, max_bytes, seconds)
        if code is None:
            report = {"carried": [], "not": {}, "refused": f"a {language or 'kernel'} kernel's state is not carried"}
        else:
            private_folder(folder)
            try:
                report = r_report(await run_in_kernel(kernel, code, seconds + 10))
            except (TimeoutError, RuntimeError):  # jupyter_client: no reply (Timeout), or not ready (Runtime)
                words = f"the kernel did not answer within {seconds + 10:g} s (a cell still running)"
                report = {"carried": [], "not": {}, "refused": words, "busy": True}
        manifest[session["path"]] = {"language": language, "folder": str(folder), "report": report}
    write_private_json(base / MANIFEST, manifest)
    return manifest


def load_code(language: str, folder: Path) -> str | None:
    """The code a kernel of `language` runs to take back what `dump_code` wrote into `folder`."""
    if language == "python":
        return PYTHON_LOAD.format(mark=R_REPORT, folder=str(folder))
    if language == "R":
        return r_load_code(folder)
    return None


def read_manifest(base: Path) -> dict:
    """What the session this one continues carried out ({} when nothing, or when the folder is not wholly this
    user's: its files are loaded into the kernels, where they would run as this user)."""
    found = read_private_json(base, MANIFEST)
    return found if isinstance(found, dict) else {}


async def restore_into(kernels, sessions: list[dict], manifest: dict, done: set[str], seconds: float) -> dict:
    """Each notebook of `manifest` whose kernel runs now (`sessions`) and is not in `done` takes back its
    variables; -> {notebook path: report} of those restored now (their paths join `done`)."""
    restored = {}
    for session in sessions:
        path, kernel_facts = session.get("path"), session.get("kernel")
        carried = manifest.get(path) if isinstance(path, str) else None
        if not kernel_facts or path in done or not isinstance(carried, dict):
            continue
        done.add(path)
        kernel = kernels.get_kernel(kernel_facts["id"])
        language = getattr(getattr(kernel, "kernel_spec", None), "language", "") or ""
        folder = Path(str(carried.get("folder", "")))
        code = load_code(language, folder) if language == carried.get("language") else None
        private = folder.is_dir() and mine_alone(folder)
        if private and language == "R":
            private = (folder / R_FILE).is_file() and mine_alone(folder / R_FILE)
        if code is None or not private:
            restored[path] = {
                "carried": [],
                "not": {},
                "refused": "its kernel is not the one that carried it, or its files are not private",
            }
            continue
        try:
            restored[path] = r_report(await run_in_kernel(kernel, code, seconds))
        except (TimeoutError, RuntimeError):
            restored[path] = {"carried": [], "not": {}, "refused": f"the kernel did not answer within {seconds:g} s"}
    return restored
