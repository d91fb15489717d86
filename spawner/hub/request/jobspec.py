"""Pure builders for a session job: the sbatch argument list and the job script."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import jinja2

from portal.settings import SLURM_NAME, EnvironmentSettings, SlurmSettings

from ...contract import SESSION_VAR, WARNING_SIGNAL_NAME
from ...slurmgres import GPU_TYPE
from .resources import Resources

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

# Every variable a session job gets from the hub, by exact name: the sudoers rule
# (deploy/sudoers.d/dsportal) keeps exactly these, and the spawner passes no other.
HUB_VARIABLES = (
    "JUPYTERHUB_ACTIVITY_INTERVAL",
    "JUPYTERHUB_ACTIVITY_URL",
    "JUPYTERHUB_ADMIN_ACCESS",
    "JUPYTERHUB_API_TOKEN",
    "JUPYTERHUB_API_URL",
    "JUPYTERHUB_BASE_URL",
    "JUPYTERHUB_CLIENT_ID",
    "JUPYTERHUB_COOKIE_HOST_PREFIX_ENABLED",
    "JUPYTERHUB_COOKIE_OPTIONS",
    "JUPYTERHUB_DEBUG",
    "JUPYTERHUB_DEFAULT_URL",
    "JUPYTERHUB_DISABLE_USER_CONFIG",
    "JUPYTERHUB_HOST",
    "JUPYTERHUB_OAUTH_ACCESS_SCOPES",
    "JUPYTERHUB_OAUTH_CALLBACK_URL",
    "JUPYTERHUB_OAUTH_CLIENT_ALLOWED_SCOPES",
    "JUPYTERHUB_OAUTH_SCOPES",
    "JUPYTERHUB_PUBLIC_HUB_URL",
    "JUPYTERHUB_PUBLIC_URL",
    "JUPYTERHUB_ROOT_DIR",
    "JUPYTERHUB_SERVER_NAME",
    "JUPYTERHUB_SERVICE_PREFIX",
    "JUPYTERHUB_SERVICE_URL",
    "JUPYTERHUB_USER",
    "JPY_API_TOKEN",
)
ACCOUNT_VARIABLES = ("USER", "LOGNAME", "HOME", "SHELL", "LANG")
JOB_VARIABLES = (*HUB_VARIABLES, SESSION_VAR, *ACCOUNT_VARIABLES)


def script_templates(folder: Path) -> jinja2.Environment:
    """Job script templates (*.sh.j2) of one folder: bash, so values are shell-quoted, not HTML-escaped."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(folder),
        autoescape=False,  # a bash script, not HTML; values are shell-quoted instead
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    env.filters["quote"] = shlex.quote
    return env


TEMPLATES = script_templates(Path(__file__).parent)


@dataclass(frozen=True)
class Account:
    """The unix account a session runs as."""

    name: str
    home: str


def output_path(home: str) -> str:
    """Slurm's output file of a session job (%j = job id), in the user's home."""
    return f"{home.rstrip('/')}/.dsportal-session-%j.log"


def as_user(slurm: SlurmSettings, username: str, env_names: list[str] | tuple[str, ...] = ()) -> list[str]:
    """sudo prefix running a command as `username`, keeping only the named variables.

    Values travel in the environment of the call, never on the command line.
    """
    argv = [slurm.sudo, "-n"]
    if env_names:
        argv.append("--preserve-env=" + ",".join(env_names))
    return argv + ["-u", username, "--"]


def site_options(slurm: SlurmSettings, account: str = "", qos: str = "") -> list[str]:
    """The admin's account, QOS and reservation for every job the portal submits (sessions and runs); `account`
    and `qos`: the ones the user chose instead (checked against their associations with the options)."""
    for what, name in (("account", account), ("QOS", qos)):
        if name and not SLURM_NAME.fullmatch(name):  # never into a command line unchecked
            raise ValueError(f"invalid Slurm {what} {name!r}")
    chosen = {"account": account or slurm.account, "qos": qos or slurm.qos, "reservation": slurm.reservation}
    return [f"--{option}={value}" for option, value in chosen.items() if value]


def gres_option(res: Resources) -> str:
    """--gres for the session's GPUs, of its type if it asked for one ('--gres=gpu:a100:2')."""
    if res.gpu_type:
        if not GPU_TYPE.fullmatch(res.gpu_type):  # checked with the options already; never into a command line
            raise ValueError(f"invalid GPU type {res.gpu_type!r}")
        return f"--gres=gpu:{res.gpu_type}:{res.gpus}"
    return f"--gres=gpu:{res.gpus}"


def sbatch_argv(
    slurm: SlurmSettings,
    res: Resources,
    account: Account,
    env_names: list[str],
    warning_minutes: int = 0,
    comment: str = "",
) -> list[str]:
    """sbatch as the user; `warning_minutes` before the time limit Slurm signals the session to save; `comment`
    tags the job with its start (spawner/hub/slurm/held.py), after the site's options, which must not replace it."""
    bad = [n for n in env_names if not _ENV_NAME.fullmatch(n)]
    if bad:
        raise ValueError(f"invalid environment variable names: {bad}")
    argv = as_user(slurm, account.name, env_names) + [
        slurm.sbatch,
        "--parsable",
        f"--job-name={slurm.job_name}",
        "--nodes=1",
        "--ntasks=1",
        f"--cpus-per-task={res.cpus}",
        f"--mem={res.memory}",
    ]
    if res.gpus:
        argv.append(gres_option(res))
    argv += [f"--time={res.time}", f"--partition={res.partition}"]
    if warning_minutes:
        # B: the batch step only: dsportal-singleuser (the job script execs it), whose port keeper passes it on
        argv.append(f"--signal=B:{WARNING_SIGNAL_NAME}@{warning_minutes * 60}")
    argv += site_options(slurm, res.account, res.qos)
    if comment:
        argv.append(f"--comment={comment}")
    argv += [
        f"--output={output_path(account.home)}",
        f"--chdir={account.home}",
        # ALL = exactly the environment sudo hands sbatch: its own basics and the
        # named variables (env_reset).  Naming variables here instead would make
        # Slurm set SLURM_GET_USER_ENV and run the user's login shell at each start.
        "--export=ALL",
    ]
    return argv


def site_lines(environment: EnvironmentSettings, variables: dict[str, str] | None = None) -> str:
    """The site's own part of every portal job script (pure): its variables (environment.variables, then
    `variables`: c.Spawner.environment's), then its prologue, with unset variables allowed (a module system's
    init reads some); "" for a site without either."""
    exported = {**environment.variables, **(variables or {})}
    lines = [f"export {name}={shlex.quote(value)}" for name, value in sorted(exported.items())]
    if lines:
        lines.insert(0, "# the site's variables (environment.variables, c.Spawner.environment)")
    if environment.prologue:
        lines += ["# the site's prologue (environment.prologue), as the admin file says", "set +u"]
        lines += [*environment.prologue, "set -u"]
    return "".join(f"{line}\n" for line in lines)


def job_script(slurm: SlurmSettings, account: Account, command: list[str], site: str = "") -> str:
    """The job script; `command[0]` is the session environment's dsportal-singleuser; `site`: site_lines'."""
    return TEMPLATES.get_template("job.sh.j2").render(
        username=account.name,
        bin_dir=str(Path(command[0]).parent),
        extra_sbatch=slurm.extra_sbatch,
        warning_signal=WARNING_SIGNAL_NAME,
        command=command,
        site=site,
    )
