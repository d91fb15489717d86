"""The admin YAML's section environment: what sessions run with on the compute nodes."""

from __future__ import annotations

import subprocess

from pydantic import model_validator

from .kinds import AbsPath, EnvName, ShellLine, StorageName
from .section import Section, key, rule_error

# Variables the portal or Slurm sets for every job: a site's value would break the session or the hub's trust in it
RESERVED_PREFIXES = ("JUPYTERHUB_", "JPY_", "DSPORTAL_", "SLURM_", "SRUN_", "SBATCH_")
RESERVED_NAMES = (
    *("PATH", "HOME", "USER", "LOGNAME", "SHELL", "CUDA_VISIBLE_DEVICES"),
    # bash's own: read-only (an export of one fails, and every job with it) or read by bash as it runs the script
    *("UID", "EUID", "PPID", "SHELLOPTS", "BASHOPTS", "BASH_VERSINFO", "BASH_ENV", "ENV", "IFS"),
)
MAX_PROLOGUE_LINES = 50


def reserved(name: str) -> bool:
    """A variable the portal or Slurm owns in a job (pure)."""
    return name in RESERVED_NAMES or name.startswith(RESERVED_PREFIXES)


def shell_syntax_error(lines: list[str]) -> str:
    """bash's own word on the lines' syntax, with what follows them in a job script ("" when they parse alone and
    leave it alone); nothing of them runs.  A warning counts: an unclosed here-document or a trailing backslash
    parses, and would swallow the session's own lines that follow."""
    script = "\n".join(lines) + "\nset -u\n: the session starts\n"
    checked = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True, timeout=10, check=False)
    said = checked.stderr.strip().replace("bash: ", "", 1)
    if checked.returncode != 0 or said:
        return said or f"bash -n exited {checked.returncode}"
    if lines[-1].endswith("\\"):
        return "its last line ends in a backslash, which would join it to the job's next line"
    return ""


class EnvironmentSettings(Section):
    prefix: AbsPath = key(
        "/opt/dsportal/venv", "Python environment on the compute nodes that runs JupyterLab (readable by every user)."
    )
    storage: dict[StorageName, AbsPath] = key(
        {}, "Storage shown as links in users' homes: name: path.", example={"isilon": "/mnt/isilon"}
    )
    variables: dict[EnvName, str] = key(
        {},
        "Variables every portal job (sessions, runs, sweeps) exports before it starts, e.g. a site's web proxy or "
        "license server. They are written in the job script, which its user reads: no secrets. Names the portal "
        "or Slurm sets (PATH, HOME, JUPYTERHUB_*, SLURM_*, ...) are refused.",
        example={"HTTPS_PROXY": "http://proxy.example.org:3128"},
    )
    prologue: list[ShellLine] = key(
        [],
        "Shell lines every portal job runs before it starts, as its user, in bash: a site's module loads (source "
        "the module system's init first: the job has no login shell). A line that fails ends the start, its "
        f"error in the job's log. At most {MAX_PROLOGUE_LINES} lines; bash checks their syntax when the file is read.",
        example=["source /etc/profile.d/lmod.sh", "module load cuda/12.4"],
    )

    @model_validator(mode="after")
    def _rules(self) -> EnvironmentSettings:
        problems: list = []
        for name in sorted(self.variables):
            if reserved(name):
                problems.append((f".variables.{name}", self.variables[name], "the portal or Slurm sets it; remove it"))
            if "\x00" in self.variables[name]:
                problems.append((f".variables.{name}", "", "must not hold a NUL character"))
        if len(self.prologue) > MAX_PROLOGUE_LINES:
            problems.append((".prologue", len(self.prologue), f"at most {MAX_PROLOGUE_LINES} lines; source a script"))
        elif self.prologue and (error := shell_syntax_error(self.prologue)):
            problems.append((".prologue", "", f"bash cannot parse it: {error}"))
        if problems:
            raise rule_error(*problems)
        return self
