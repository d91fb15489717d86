"""A Python kernel's variables carried into a new kernel: dumped by the old session's, loaded by its successor's.

Runs inside the user's kernel (the session's Python 3 kernel imports the portal's packages through the user's
layer), as the user.  `dump` writes each variable of the user's namespace that cloudpickle can write into a
private folder, one file per variable, and a manifest; what cannot be carried (an open file, a socket, a
generator, a lock) is named with its kind, and so is what would pass the size or time the admin allows.  A
torch tensor or module on a GPU is written from the CPU and put back on a GPU by `load` (on the CPU, said so,
where the new job has none).  `load` reads only a folder that is this user's and no one else may write: to
unpickle is to run code, and a file another account could plant would run as this user.

Each function returns a report, a dict the session shows: "41 variables carried, 2 not (a socket, a
generator)".
"""

from __future__ import annotations

import json
import os
import time
import types
from pathlib import Path

import cloudpickle

from ..ownership import mine_alone, write_private_json

CARRY_FORMAT = 1
MANIFEST = "manifest.json"
HIDDEN = {"In", "Out", "exit", "quit", "get_ipython", "open"}  # IPython's own names in every namespace


def user_variables(namespace: dict) -> dict:
    """The user's variables: not IPython's (In, Out, _, _1, ...), not a name starting with an underscore, not
    what an import brought (a module, or a class or function of one: the new kernel imports it again)."""
    return {
        name: value
        for name, value in namespace.items()
        if not name.startswith("_") and name not in HIDDEN and not _imported(value)
    }


def _imported(value: object) -> bool:
    if isinstance(value, types.ModuleType):
        return True
    named = isinstance(value, type | types.FunctionType | types.BuiltinFunctionType)
    return named and getattr(value, "__module__", "__main__") not in ("__main__", None)


def _kind(value: object) -> str:
    """What a value is, in a word a user knows ("a socket", "a generator", "an open file")."""
    name = type(value).__name__
    words = {
        "socket": "a socket",
        "generator": "a generator",
        "coroutine": "a coroutine",
        "TextIOWrapper": "an open file",
        "BufferedReader": "an open file",
        "BufferedWriter": "an open file",
        "lock": "a lock",
        "RLock": "a lock",
        "Thread": "a thread",
    }
    return words.get(name, f"a {name}")


def _on_gpu(value: object) -> bool:
    """A torch tensor, or a torch module with a parameter, on a GPU."""
    if getattr(value, "is_cuda", False) is True:
        return True
    parameters = getattr(value, "parameters", None)
    if callable(parameters) and type(value).__module__.startswith("torch"):
        try:
            return any(p.is_cuda for p in parameters())
        except Exception:  # noqa: BLE001 - a module that cannot list its parameters is carried as it is
            return False
    return False


def _to_cpu(value: object) -> object:
    return value.cpu() if hasattr(value, "cpu") else value


def private_folder(folder: Path) -> Path:
    """The carry's folder, made private (0700) for this user; OSError when it is a link or another's."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    if not mine_alone(folder, others=0):  # a link, or another account's folder (this user's is made 0700 next)
        raise OSError(f"{folder} is not a folder of this user's")
    os.chmod(folder, 0o700)
    return folder


def dump(namespace: dict, folder: Path, max_bytes: int, seconds: float, clock=time.monotonic) -> dict:
    """Write the user's variables into `folder`, at most `max_bytes` in all and for at most `seconds`;
    -> {"carried": [names], "not": {name: why}, "bytes": n, "seconds": s}."""
    started = clock()
    private_folder(folder)
    for old in folder.iterdir():  # an earlier dump's: a variable since deleted must not come back
        if old.is_file() and not old.is_symlink():
            old.unlink()
    carried: dict[str, dict] = {}
    refused: dict[str, str] = {}
    total = 0
    for name, value in sorted(user_variables(namespace).items()):
        if clock() - started > seconds:
            refused[name] = f"not written: the {seconds:g} s for carrying had passed"
            continue
        gpu = _on_gpu(value)
        try:
            data = cloudpickle.dumps(_to_cpu(value) if gpu else value, protocol=5)
        except Exception:  # noqa: BLE001 - whatever pickling raises, the variable is named, the rest go on
            refused[name] = f"{_kind(value)} cannot be carried into a new job"
            continue
        if total + len(data) > max_bytes:
            refused[name] = f"{len(data) / 1e6:.0f} MB would pass the {max_bytes / 1e9:g} GB allowed for carrying"
            continue
        path = folder / f"{name}.pickle"
        with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600), "wb") as out:
            out.write(data)
        total += len(data)
        carried[name] = {"bytes": len(data), "gpu": gpu}
    manifest = {"carry": CARRY_FORMAT, "carried": carried, "not": refused, "bytes": total}
    write_private_json(folder / MANIFEST, manifest)
    return {"carried": sorted(carried), "not": refused, "bytes": total, "seconds": round(clock() - started, 3)}


def load(namespace: dict, folder: Path, gpu_available: bool | None = None, clock=time.monotonic) -> dict:
    """Put what `dump` wrote back into `namespace` (the new kernel's); -> {"carried": [names], "not": {name:
    why}, "seconds": s}.  Nothing is read from a folder or file another account owns or may write."""
    started = clock()
    if not folder.is_dir() or not mine_alone(folder):
        return {"carried": [], "not": {}, "refused": f"{folder} is not a private folder of this user's", "seconds": 0}
    manifest = json.loads((folder / MANIFEST).read_text())
    if manifest.get("carry") != CARRY_FORMAT:
        return {"carried": [], "not": {}, "refused": "the carried state is of another portal version", "seconds": 0}
    if gpu_available is None:
        gpu_available = _gpu_available()
    carried, refused, notes = [], dict(manifest.get("not", {})), {}
    for name, facts in sorted(manifest.get("carried", {}).items()):
        path = folder / f"{name}.pickle"
        if not name.isidentifier() or not path.is_file() or not mine_alone(path):
            refused[name] = "its file is missing or not private"
            continue
        try:
            value = cloudpickle.loads(path.read_bytes())
        except Exception as e:  # noqa: BLE001 - a package missing in the new job, say: named, the rest go on
            refused[name] = f"could not be read back ({type(e).__name__}: {str(e)[:200]})"
            continue
        if facts.get("gpu"):
            if gpu_available:
                value = value.cuda()
            else:
                notes[name] = "on the CPU: this job has no GPU"
        namespace[name] = value
        carried.append(name)
    return {"carried": carried, "not": refused, "notes": notes, "seconds": round(clock() - started, 3)}


def _gpu_available() -> bool:
    try:
        import torch  # noqa: PLC0415 - only where a GPU variable was carried
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def report_words(report: dict) -> str:
    """'41 variables carried, 2 not (a socket, a generator)' (pure)."""
    carried, missing = len(report.get("carried", [])), report.get("not", {})
    words = f"{carried} variable{'s' if carried != 1 else ''} carried"
    if report.get("refused"):
        return f"nothing carried: {report['refused']}"
    if missing:
        kinds = sorted({_short(why) for why in missing.values()})
        words += f", {len(missing)} not ({', '.join(kinds[:5])})"
    return words


def _short(why: str) -> str:
    if " cannot be carried" in why:
        return why.split(" cannot be carried")[0]
    if "would pass" in why:
        return "over the size allowed"
    if "had passed" in why:
        return "out of time"
    return "unreadable"


# --- R kernels: save.image's own means, run in the R kernel (the code is built here, pure) ---
R_FILE = "workspace.RData"
R_REPORT = "dsportal-carry:"  # the line the R code prints its report on, as JSON


def r_dump_code(folder: Path, max_bytes: int) -> str:
    """R code that saves the global environment's variables into folder/workspace.RData, leaving out what
    cannot live past its process (a connection, an external pointer) and what passes `max_bytes`, and prints
    its report as one line R_REPORT + JSON.  The folder is made private (0700) first by the caller."""
    path = json.dumps(str(folder / R_FILE))
    return f"""local({{
  names <- ls(envir = .GlobalEnv)
  not <- list(); keep <- character(0); total <- 0
  for (n in names) {{
    x <- get(n, envir = .GlobalEnv)
    if (inherits(x, "connection") || typeof(x) %in% c("externalptr", "environment")) {{
      not[[n]] <- paste0("a ", class(x)[1], " cannot be carried into a new job"); next
    }}
    size <- as.numeric(utils::object.size(x))
    if (total + size > {max_bytes}) {{
      not[[n]] <- sprintf("%.0f MB would pass the %g GB allowed for carrying", size / 1e6, {max_bytes} / 1e9); next
    }}
    total <- total + size; keep <- c(keep, n)
  }}
  old <- Sys.umask("077"); save(list = keep, envir = .GlobalEnv, file = {path}); Sys.umask(old)
  cat("{R_REPORT}", jsonlite::toJSON(list(carried = keep, not = not, bytes = total), auto_unbox = TRUE), "\\n")
}})"""


def r_load_code(folder: Path) -> str:
    """R code that loads folder/workspace.RData into the global environment and prints its report line (the
    caller checks the folder is private first: loading an .RData runs no code, but its values are trusted)."""
    path = json.dumps(str(folder / R_FILE))
    return f"""local({{
  carried <- load({path}, envir = .GlobalEnv)
  cat("{R_REPORT}", jsonlite::toJSON(list(carried = carried, not = list()), auto_unbox = TRUE), "\\n")
}})"""


def r_report(printed: str) -> dict:
    """The report line of the R code's output -> {"carried": [...], "not": {...}}; a failure in words."""
    for line in printed.splitlines():
        if line.startswith(R_REPORT):
            try:
                found = json.loads(line[len(R_REPORT) :])
            except ValueError:
                break
            carried = found.get("carried", [])
            report = {
                "carried": sorted([carried] if isinstance(carried, str) else carried),
                "not": found.get("not") or {},
            }
            for key in ("notes", "refused"):
                if found.get(key):
                    report[key] = found[key]
            return report
    return {"carried": [], "not": {}, "refused": "the R kernel did not say what it carried"}
