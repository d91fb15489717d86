"""Pure builders for a session job: its JobRequest (jobrequest.py turns it into sbatch's arguments) and its script."""

from __future__ import annotations

import shlex
from pathlib import Path

import jinja2

from portal.settings import EnvironmentSettings, SlurmSettings

from ...contract import SESSION_VAR, WARNING_SIGNAL_NAME
from .jobrequest import Account, JobRequest
from .resources import Resources

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


def output_path(home: str) -> str:
    """Slurm's output file of a session job (%j = job id), in the user's home."""
    return f"{home.rstrip('/')}/.dsportal-session-%j.log"


def session_job(
    slurm: SlurmSettings,
    res: Resources,
    account: Account,
    env_names: list[str] | tuple[str, ...],
    warning_minutes: int = 0,
    comment: str = "",
) -> JobRequest:
    """A session's job: one node of `res`; `warning_minutes` before the time limit Slurm signals the session to
    save; `comment` tags the job with its start (spawner/hub/slurm/held.py)."""
    return JobRequest(
        user=account,
        name=slurm.job_name,
        partition=res.partition,
        time=res.time,
        cpus=res.cpus,
        memory=res.memory,
        gpus=res.gpus,
        gpu_type=res.gpu_type,
        shards=res.shards,
        account=res.account,
        qos=res.qos,
        output=output_path(account.home),
        chdir=account.home,
        env_names=tuple(env_names),
        warning_seconds=warning_minutes * 60,
        signal=WARNING_SIGNAL_NAME,
        comment=comment,
    )


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
