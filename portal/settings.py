"""The admin settings, declared once on pydantic: each key's type, limits, default and help text.

Runs in the hub and in `dsportal check-config`.  The loader (portal/config.py)
turns pydantic's errors into sentences an admin can act on, and the commented
example file (portal/example.py) is rendered from these declarations.

A value's "allowed" text is part of its type (`Rule` for strings; integer and
number bounds, choices, lists and mappings are described from their
constraints by `describe`), so every message says what to write instead.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError


@dataclass(frozen=True)
class Rule:
    """A string type: a full-match pattern and what it means in words."""

    pattern: str
    describe: str
    allow_empty: bool = False

    def check(self, value: str) -> str:
        if value == "" and self.allow_empty:
            return value
        if not re.fullmatch(self.pattern, value):
            raise PydanticCustomError("dsportal_text", self.describe)
        return value


def text(pattern: str, describe: str, allow_empty: bool = False) -> Any:
    rule = Rule(pattern, describe + (", or empty" if allow_empty else ""), allow_empty)
    return Annotated[str, Field(strict=True), rule, AfterValidator(rule.check)]


def integer(low: int, high: int) -> Any:
    return Annotated[int, Field(strict=True, ge=low, le=high)]


def number(above: float, at_most: float) -> Any:
    return Annotated[float, Field(strict=True, gt=above, le=at_most)]


Flag = Annotated[bool, Field(strict=True)]

# --- value kinds -----------------------------------------------------------------
USERNAME_PATTERN = r"[a-z_][a-z0-9_.-]{0,31}"
Username = text(USERNAME_PATTERN, "must be a unix username: lower-case letters, digits, _ . - (at most 32)")


def is_username(name: str) -> bool:
    """The portal's one rule for usernames (login, admin list, job submission)."""
    return re.fullmatch(USERNAME_PATTERN, name) is not None


GroupName = text(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}", "must be a group name: letters, digits, _ . -")
_SLURM_NAME = (r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}", "must be a Slurm name: letters, digits, _ . - (at most 64)")
SlurmName = text(*_SLURM_NAME)
OptionalSlurmName = text(*_SLURM_NAME, allow_empty=True)
_HTTP_URL = (r"https?://[A-Za-z0-9.\[\]:_-]+(:[0-9]{1,5})?/?", "must be a URL such as http://0.0.0.0:8000")
HttpUrl = text(*_HTTP_URL)
OptionalHttpUrl = text(*_HTTP_URL, allow_empty=True)
_ABS_PATH = (r"/[A-Za-z0-9_./+@-]*", "must be an absolute path (letters, digits, _ . / + @ -)")
AbsPath = text(*_ABS_PATH)
OptionalAbsPath = text(*_ABS_PATH, allow_empty=True)
Command = text(r"[A-Za-z0-9_./+-]+", "must be a command name or an absolute path, without spaces")
Size = text(r"[1-9][0-9]{0,6}[MGT]", "must be a size such as 512M, 48G or 1T")
OptionalDN = text(
    r"[^\x00-\x1f]+", "must be an LDAP DN on one line, e.g. ou=people,dc=example,dc=org", allow_empty=True
)
LdapUri = text(
    r"ldaps?://[A-Za-z0-9.\[\]:_-]+(:[0-9]{1,5})?/?",
    "must be an LDAP URI such as ldap://ldap1.example.org:389 or ldaps://ldap1:636",
)
LdapAttribute = text(r"[A-Za-z][A-Za-z0-9-]{0,63}", "must be an LDAP attribute name such as uid")
StorageName = text(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}", "must be a link name: letters, digits, _ . -")
SbatchOption = text(
    r"--[a-z][a-z-]*(=[^\s'\"\\`$;|&<>]+)?",
    "must be one sbatch option such as --constraint=v100 (no spaces, quotes or shell characters)",
)
KernelName = text(r"[a-z0-9][a-z0-9_.-]{0,63}", "must be a kernel name: lower-case letters, digits, _ . - (at most 64)")
ModuleName = text(
    r"[A-Za-z0-9_][A-Za-z0-9_./+-]{0,127}", "must be a module name such as cuda/12.1 (letters, digits, _ . / + -)"
)
Argument = text(r"[^\x00-\x1f]{1,512}", "must be one command-line argument on one line")
Label = text(r"[^\x00-\x1f<>]{1,80}", "must be a short label on one line (no < >)")
OptionalLabel = text(r"[^\x00-\x1f<>]{1,80}", "must be a short label on one line", allow_empty=True)
LanguageName = text(r"[A-Za-z][A-Za-z0-9+#_-]{0,31}", "must be a language name such as python or R")
DbUrl = text(
    r"[a-z][a-z0-9+]*://[^\s]*",
    "must be an SQLAlchemy URL such as sqlite:////var/lib/dsportal/jupyterhub.sqlite",
    allow_empty=True,
)
Timeout = number(0, 600)
IpAddress = text(r"[0-9A-Fa-f:.]{2,45}", "must be an IP address such as 127.0.0.1 or ::1")

RESERVED_KERNELS = ("python3", "ir")

# Options the portal sets itself; an admin line must not fight them.
MANAGED_SBATCH_OPTIONS = frozenset(
    "job-name nodes ntasks cpus-per-task mem mem-per-cpu mem-per-gpu gres gpus time partition "
    "account qos reservation output error chdir export get-user-env uid gid parsable wrap signal".split()
)


def size_to_mib(size: str) -> int:
    """'48G' -> 49152 (Slurm's units: M, G, T are powers of 1024)."""
    factor = {"M": 1, "G": 1024, "T": 1024 * 1024}[size[-1]]
    return int(size[:-1]) * factor


def key(default: Any = ..., help: str = "", example: Any = None, **kw) -> Any:
    """A setting: its default (... = required), help text, and the value the example file shows."""
    extra = {"example": example} if example is not None else None
    if isinstance(default, (list, dict)):
        return Field(default_factory=lambda: copy.deepcopy(default), description=help, json_schema_extra=extra, **kw)
    return Field(default, description=help, json_schema_extra=extra, **kw)


def rule_error(*problems: tuple[str, Any, str] | str) -> PydanticCustomError:
    """A cross-key rule failed: (sub-path, value, what is allowed) per problem, or a whole sentence."""
    return PydanticCustomError("dsportal_rule", "cross-key rule", {"problems": list(problems)})


class Section(BaseModel):
    """A mapping of settings: unknown keys are errors, an empty section takes every default."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)

    @model_validator(mode="before")
    @classmethod
    def _empty_is_defaults(cls, value: Any) -> Any:
        return {} if value is None else value


def section(model: type[Section], help: str) -> Any:
    # {} validated in the field's place, so a missing section's errors carry its name
    return Field(default_factory=dict, description=help)


# --- the sections --------------------------------------------------------------------
class HubSettings(Section):
    bind_url: HttpUrl = key("http://0.0.0.0:8000", "Public address of the portal (the proxy listens here).")
    tls_cert: OptionalAbsPath = key(
        "", "The portal's TLS certificate (PEM, with its chain); bind_url is then https://."
    )
    tls_key: OptionalAbsPath = key(
        "", "The certificate's private key (PEM, readable by the hub's service account only)."
    )
    subdomain_host: OptionalHttpUrl = key(
        "",
        "One origin per user: each user's server at https://USER.<this host>, so a page one user serves "
        "cannot script another's session. Needs DNS (a wildcard record) and a certificate for *.<host>; "
        "empty = all sessions under the hub's own origin.",
        example="https://portal.example.org",
    )
    behind_tls_proxy: Flag = key(
        False,
        "A TLS proxy in front of the portal terminates HTTPS (then bind_url is that proxy's plain "
        "target, e.g. http://127.0.0.1:8000); silences the clear-text warning.",
    )
    internal_bind_url: HttpUrl = key(
        "http://0.0.0.0:8081",
        "Where the hub's own API listens: an address the compute nodes reach, not "
        "the public network (sessions report their port here).",
    )
    internal_connect_url: OptionalHttpUrl = key(
        "", "The hub API address as compute nodes reach it; empty = http://<this host's name>:<port>."
    )
    admin_users: list[Username] = key([], "Users who are portal admins.")
    admin_groups: list[GroupName] = key([], "Directory groups whose members are portal admins.")
    data_dir: AbsPath = key("/var/lib/dsportal", "Folder for the hub's state (cookie secret, database).")
    db_url: DbUrl = key("", "Hub database; empty = an SQLite file in data_dir.")
    external_proxy: Flag = key(
        False,
        "The proxy runs as its own service (deploy/systemd/dsportal-proxy.service), so a hub restart "
        "leaves sessions reachable; false = the hub starts it as its child. Either way the token is "
        "CONFIGPROXY_AUTH_TOKEN in the hub's environment.",
    )
    proxy_api_url: HttpUrl = key("http://127.0.0.1:8001", "The proxy's REST API (external_proxy: true).")
    proxy_addresses: list[IpAddress] = key(
        ["127.0.0.1", "::1"],
        "Addresses the proxy reaches the hub from: only from these is X-Forwarded-For "
        "believed (the login throttle's client address); anything else is the peer itself.",
    )
    token_max_days: number(0, 3650) = key(
        30, "Longest life of an API token a user creates, in days (tokens without an expiry get this one)."
    )
    api_max_body_bytes: integer(1024, 16 * 1024 * 1024) = key(
        65536,
        "Largest request body, in bytes, that the portal's own endpoints (/hub/api/dsportal/..., the session "
        "start and stop, shares, the usage pages) read; a larger one is refused with 413 before it is read. "
        "Their largest real body is a usage report of a 64-GPU node, about 11 KB.",
    )
    api_rate_per_minute: integer(1, 100_000) = key(
        300,
        "Requests a minute each user (or service, or client address when nobody is logged in) may send to the "
        "portal's own endpoints; more get 429 with the seconds to wait. The home page asks about 6 a minute, "
        "a session and its JupyterLab a few more.",
    )
    api_burst: integer(1, 100_000) = key(
        150,
        "Requests to the portal's own endpoints a user may send at once, above the steady rate "
        "(api_rate_per_minute), before they wait.",
    )
    max_body_bytes: integer(65536, 100 * 1024 * 1024) = key(
        1024 * 1024,
        "Largest request body, in bytes, the hub's server reads for any endpoint, JupyterHub's own included "
        "(tornado's default: 100 MB); over it the connection is closed without an answer. At least "
        "api_max_body_bytes.",
    )

    @model_validator(mode="after")
    def _rules(self) -> HubSettings:
        problems: list = []
        if bool(self.tls_cert) != bool(self.tls_key):
            problems.append((".tls_key" if self.tls_cert else ".tls_cert", "", "tls_cert and tls_key go together"))
        https = self.bind_url.startswith("https://")
        if self.tls_cert and not https:
            problems.append((".bind_url", self.bind_url, "with tls_cert the portal serves https://; write https://..."))
        if https and not self.tls_cert:
            problems.append((".tls_cert", "", "an https:// bind_url needs tls_cert and tls_key"))
        if self.max_body_bytes < self.api_max_body_bytes:
            problems.append(
                (".max_body_bytes", self.max_body_bytes, "must be at least api_max_body_bytes, which it caps")
            )
        if problems:
            raise rule_error(*problems)
        return self


class LdapSettings(Section):
    uris: Annotated[list[LdapUri], Field(min_length=1)] = key(
        ["ldap://127.0.0.1:389"], "Directory servers, tried in order (failover)."
    )
    tls: Literal["auto", "plain", "starttls", "ldaps"] = key(
        "auto",
        "Transport security: auto (StartTLS with certificate checks to any server but this host's own, "
        "ldaps for ldaps:// URIs), plain (logs a warning for a remote server), starttls or ldaps.",
    )
    ca_file: OptionalAbsPath = key("", "CA certificate file for starttls/ldaps; empty = system CAs.")
    mail_attribute: LdapAttribute = key(
        "mail", "The attribute holding a user's e-mail address (the portal's mail goes there, when they opt in)."
    )
    bind_dn_template: OptionalDN = key(
        "",
        "Direct bind: the user's DN with {username}, e.g. uid={username},ou=people,dc=example,dc=org.",
        example="uid={username},ou=people,dc=example,dc=org",
    )
    service_dn: OptionalDN = key("", "Search-then-bind: the service account that searches for users.")
    service_password_file: OptionalAbsPath = key("", "File holding the service account's password (mode 0600).")
    user_search_base: OptionalDN = key(
        "", "Where users are searched (search-then-bind) and read.", example="ou=people,dc=example,dc=org"
    )
    username_attribute: LdapAttribute = key("uid", "Attribute holding the login name.")
    group_search_base: OptionalDN = key(
        "",
        "Where groups are searched (posixGroup memberUid and groupOfNames member); empty = no groups.",
        example="ou=groups,dc=example,dc=org",
    )
    allowed_groups: list[GroupName] = key([], "Only members of these groups may log in; empty = any valid user.")
    connect_timeout: Timeout = key(5, "Seconds to wait for a directory server to accept a connection.")
    response_timeout: Timeout = key(5, "Seconds to wait for a directory answer.")
    max_failures: integer(1, 1000) = key(
        5,
        "Failed logins of one username from one address before that pair waits `backoff` seconds; from "
        "then on, logins of that username from anywhere are slowed (never blocked).",
    )
    slowdown: number(0, 60) = key(
        5,
        "Most seconds a login of a username that failed max_failures times (from any address) waits "
        "before the directory is asked: slows guessing without locking the user out.",
    )
    max_waiting: integer(1, 10000) = key(
        64,
        "Logins that may wait for the directory at once; more get 'too many logins right now' (HTTP 503). "
        "Slowed logins use at most half of them, and wait out their delay without holding one; at most this "
        "many slowed logins of one address wait at once (more get HTTP 429).",
    )
    max_address_failures: integer(1, 10000) = key(
        30,
        "Failed logins from one client address (any username) before its logins are slowed (half a "
        "second, doubling, at most `slowdown` seconds) while its failures outnumber its good logins; never "
        "refused, since many users may share an address.",
    )
    failure_window: integer(1, 86400) = key(300, "Seconds over which failed logins are counted.")
    backoff: integer(1, 86400) = key(60, "Seconds a throttled username-and-address pair must wait.")
    refresh_seconds: integer(0, 86400) = key(
        3600,
        "Seconds after which a logged-in account is looked up again (groups, admin rights, still "
        "allowed); needs service_dn; 0 = only at login.",
    )

    @model_validator(mode="after")
    def _rules(self) -> LdapSettings:
        problems: list = []
        ldaps = [u.startswith("ldaps://") for u in self.uris]
        if self.tls == "ldaps" and not all(ldaps):
            problems.append((".uris", ", ".join(self.uris), "with tls: ldaps every URI must start with ldaps://"))
        if self.tls not in ("ldaps", "auto") and any(ldaps):
            problems.append((".tls", self.tls, "ldaps:// URIs need tls: ldaps (or auto)"))
        if self.bind_dn_template and "{username}" not in self.bind_dn_template:
            problems.append((".bind_dn_template", self.bind_dn_template, "must contain {username}"))
        if not self.bind_dn_template and not (self.service_dn and self.service_password_file and self.user_search_base):
            problems.append(
                ": no way to find users (set bind_dn_template, or service_dn, "
                "service_password_file and user_search_base for search-then-bind)"
            )
        if problems:
            raise rule_error(*problems)
        return self


class Partition(Section):
    name: SlurmName = key(help="Slurm partition name, as sinfo shows it.")
    max_gpus: integer(1, 16) = key(help="Most GPUs one session may ask for here (GPUs of one node).")
    default: Flag = key(False, "Preselect this partition in the form. At most one; else the first.")
    display_name: OptionalLabel = key("", "Label shown in the form; empty = the partition name.")
    max_nodes: integer(1, 1024) = key(
        1, "Most nodes one job run from the portal (Run as a job) may span here; sessions always use one node."
    )


class SlurmSettings(Section):
    partitions: Annotated[list[Partition], Field(min_length=1)] = key(
        [{"name": "gpu", "max_gpus": 4, "default": True, "display_name": ""}],
        "Partitions users may choose.",
        example=[{"name": "sxm2", "max_gpus": 4, "default": True, "display_name": "V100 SXM2 (4 GPUs per node)"}],
    )
    cores_per_gpu: integer(1, 256) = key(8, "CPU cores that come with each GPU.")
    memory_per_gpu: Size = key("48G", "Memory that comes with each GPU (M, G or T).")
    cpu_only_cores: integer(1, 256) = key(4, "CPU cores of a session with 0 GPUs.")
    cpu_only_memory: Size = key("16G", "Memory of a session with 0 GPUs.")
    default_hours: number(0, 8760) = key(8, "Session length preselected in the form, in hours.")
    max_hours: number(0, 8760) = key(12, "Longest session a user may ask for, in hours.")
    account: OptionalSlurmName = key("", "Slurm account charged for sessions; empty = the user's default.")
    qos: OptionalSlurmName = key("", "Slurm QOS for sessions; empty = default.")
    reservation: OptionalSlurmName = key("", "Slurm reservation for sessions; empty = none.")
    extra_sbatch: list[SbatchOption] = key([], "Extra #SBATCH lines (admin only), e.g. --constraint=v100.")
    sbatch: Command = key("sbatch", "The sbatch command.")
    squeue: Command = key("squeue", "The squeue command.")
    scancel: Command = key("scancel", "The scancel command.")
    sudo: Command = key("sudo", "sudo, used to submit and cancel jobs as the user.")
    sinfo: Command = key("sinfo", "The sinfo command (dsportal doctor).")
    sacct: Command = key("sacct", "The sacct command: finished jobs and their use, from Slurm's accounting (slurmdbd).")
    min_uid: integer(1, 2**31 - 1) = key(
        1000, "Lowest uid that may run sessions: system accounts (and root, uid 0, always) are refused."
    )
    deny_users: list[Username] = key(["root"], "Accounts that may never run sessions, whatever their uid.")
    user_groups: list[GroupName] = key(
        [],
        "Unix groups of portal users (the sudoers rule's runas groups); empty = any account from min_uid.",
        example=["datasci"],
    )
    command_timeout: Timeout = key(20, "Seconds before a Slurm command counts as hung.")
    start_timeout: integer(10, 86400) = key(
        900, "Seconds a session may wait in the queue and start before it is given up."
    )
    stop_timeout: integer(5, 3600) = key(
        60,
        "Seconds a stop retries scancel and waits for the job to leave the queue; after that the job "
        "stays marked stopping and the hub's reconciler keeps cancelling it.",
    )
    cluster_info_seconds: integer(1, 3600) = key(
        15,
        "Seconds one answer about free GPUs (sinfo) and start estimates is reused for everyone; "
        "Slurm calls then do not grow with the number of users looking.",
    )
    job_name: SlurmName = key(
        "dsportal",
        "Name of every session job. The portal owns the jobs of this name: one it does not track "
        "(e.g. from an sbatch that timed out) is cancelled. Give each portal on a cluster its own name.",
    )
    reconcile_seconds: integer(5, 86400) = key(
        60,
        "Seconds between the hub's checks for session jobs no session owns; one found so at two checks in a row "
        "is cancelled.",
    )
    allow_extend: Flag = key(
        False,
        "Users may extend a running session (JupyterLab's status bar, the hub's home page). Needs the "
        "sudoers rule for dsportal-extend-session (deploy/sudoers.d/dsportal), or a hub account that is a "
        "Slurm operator.",
    )
    extend_step_hours: number(0, 168) = key(1, "Hours one extension adds.")
    extend_command: AbsPath = key(
        "/opt/dsportal/venv/bin/dsportal-extend-session",
        "The root-owned helper the hub runs through sudo to raise a session's time limit (it checks the job "
        "is a portal session and the limits, then runs scontrol update); the sudoers rule names this path.",
    )
    scontrol: Command = key("scontrol", "The scontrol command (the extension helper).")
    extend_max_hours: number(0, 8760) = key(
        24, "Longest a session may last with its extensions, in hours (the partition's MaxTime also applies)."
    )

    @model_validator(mode="after")
    def _rules(self) -> SlurmSettings:
        problems: list = []
        names = [p.name for p in self.partitions]
        for dup in sorted({n for n in names if names.count(n) > 1}):
            problems.append((".partitions", dup, "each partition name may appear once"))
        defaults = [p.name for p in self.partitions if p.default]
        if len(defaults) > 1:
            problems.append((".partitions", ", ".join(defaults), "at most one partition may have default: true"))
        if self.extend_max_hours < self.max_hours and self.allow_extend:
            problems.append(
                (
                    ".extend_max_hours",
                    self.extend_max_hours,
                    f"must be at least max_hours ({self.max_hours:g}): it is the length with extensions",
                )
            )
        if self.default_hours > self.max_hours:
            problems.append((".default_hours", self.default_hours, f"must not exceed max_hours ({self.max_hours:g})"))
        for i, line in enumerate(self.extra_sbatch):
            option = line[2:].split("=", 1)[0]
            if option in MANAGED_SBATCH_OPTIONS:
                problems.append(
                    (f".extra_sbatch[{i}]", line, f"--{option} is set by the portal itself; remove this line")
                )
        if problems:
            raise rule_error(*problems)
        return self

    @property
    def default_partition(self) -> Partition:
        return next((p for p in self.partitions if p.default), self.partitions[0])


class EnvironmentSettings(Section):
    prefix: AbsPath = key(
        "/opt/dsportal/venv", "Python environment on the compute nodes that runs JupyterLab (readable by every user)."
    )
    storage: dict[StorageName, AbsPath] = key(
        {}, "Storage shown as links in users' homes: name: path.", example={"isilon": "/mnt/isilon"}
    )


DEFAULT_KERNEL_COMMAND = ["python3", "-m", "ipykernel_launcher", "-f", "{connection_file}"]


class ModuleKernel(Section):
    name: KernelName = key(help="Kernel name (its folder name).")
    display_name: Label = key(help="Name in the launcher.")
    load: Annotated[list[ModuleName], Field(min_length=1)] = key(help="Modules to load, in order.")
    command: Annotated[list[Argument], Field(min_length=1)] = key(
        DEFAULT_KERNEL_COMMAND, "The kernel command after loading; {connection_file} is filled in."
    )
    language: LanguageName = key("python", "The kernel's language.")


Runtime = Literal["apptainer", "singularity", "charliecloud"]


class ContainerKernel(Section):
    name: KernelName = key(help="Kernel name (its folder name).")
    display_name: Label = key(help="Name in the launcher.")
    image: AbsPath = key(
        help="The image: a .sif file (Apptainer, SingularityCE), or a directory or .sqfs SquashFS image (Charliecloud)."
    )
    runtime: Literal["", "apptainer", "singularity", "charliecloud"] = key(
        "", "The container runtime; empty = kernels.container_runtime."
    )
    binds: list[AbsPath] = key([], "Extra paths to bind (storage mounts and the home are always bound).")
    python: Command = key("python3", "The image's Python, which runs ipykernel.")


class KernelSettings(Section):
    container_runtime: Runtime = key(
        "apptainer",
        "Runtime of container kernels that name none: apptainer or singularity (--nv for the "
        "GPUs), or charliecloud (ch-run, unprivileged; its image needs NVIDIA's libraries injected once with "
        "ch-fromhost --nvidia).",
    )
    python_display_name: Label = key("Python 3", "Name of the session's own Python 3 kernel in the launcher.")
    r: Flag = key(True, "Offer an R kernel (IRkernel) when R is installed on the compute node.")
    r_display_name: Label = key("R", "Name of the R kernel in the launcher.")
    r_command: Command = key("R", "The R executable on the compute nodes.")
    module_command: AbsPath = key(
        "/usr/share/lmod/lmod/libexec/lmod", "Lmod's `lmod` or Environment Modules' `modulecmd` on the compute nodes."
    )
    modulepath: list[AbsPath] = key([], "Module folders searched, before the node's own MODULEPATH.")
    modules: list[ModuleKernel] = key(
        [],
        "Kernels that load environment modules, then run a command.",
        example=[
            {
                "name": "pytorch-modules",
                "display_name": "PyTorch (cluster modules)",
                "load": ["cuda/12.1", "pytorch/2.1"],
                "command": ["python3", "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "language": "python",
            }
        ],
    )
    containers: list[ContainerKernel] = key(
        [],
        "Kernels that run inside a Singularity/Apptainer image (.sif).",
        example=[
            {
                "name": "ngc-pytorch-24.01",
                "display_name": "PyTorch 24.01 (NGC container)",
                "image": "/shared/containers/pytorch_24.01-py3.sif",
                "runtime": "apptainer",
                "binds": ["/scratch"],
            }
        ],
    )

    @model_validator(mode="after")
    def _rules(self) -> KernelSettings:
        problems: list = []
        names = [k.name for k in self.modules] + [k.name for k in self.containers]
        for name in sorted(set(names)):
            if names.count(name) > 1:
                problems.append(("", name, "each kernel name may appear once across modules and containers"))
            if name in RESERVED_KERNELS:
                problems.append(("", name, f"{', '.join(RESERVED_KERNELS)} are the built-in Python 3 and R kernels"))
        for i, kernel in enumerate(self.containers):
            runtime = self.runtime_of(kernel)
            if runtime != "charliecloud" and not kernel.image.endswith(".sif"):
                problems.append(
                    (
                        f".containers[{i}].image",
                        kernel.image,
                        f"{runtime} runs .sif images; convert it (dsportal images pull) or use charliecloud",
                    )
                )
            if runtime == "charliecloud" and kernel.image.endswith(".sif"):
                problems.append(
                    (
                        f".containers[{i}].image",
                        kernel.image,
                        "charliecloud runs a directory or .sqfs image (dsportal images pull --runtime charliecloud)",
                    )
                )
        if problems:
            raise rule_error(*problems)
        return self

    def runtime_of(self, kernel: ContainerKernel) -> str:
        return kernel.runtime or self.container_runtime


class TensorBoardSettings(Section):
    max_instances: integer(1, 20) = key(
        3, "TensorBoards one session may run at once (each rereads its folder every 5 s, in the session's memory)."
    )


class Preset(Section):
    label: Label = key(help="The button's text on the home page, e.g. 1 GPU · 8 h.")
    partition: OptionalSlurmName = key("", "One of slurm.partitions; empty = the default partition.")
    gpus: integer(0, 16) = key(0, "GPUs (0 = a CPU-only session).")
    hours: number(0, 8760) = key(8, "Session length in hours.")


class SessionSettings(Section):
    warn_minutes: Annotated[list[integer(1, 1440)], Field(max_length=5)] = key(
        [15, 5], "Minutes before a session's time limit at which JupyterLab shows a notification."
    )
    save_minutes: integer(1, 60) = key(
        3,
        "Minutes before the time limit at which Slurm warns the session (sbatch --signal) and JupyterLab "
        "saves every open document with unsaved changes; it then saves them again every 20 s until the end. "
        "Slurm sends its warning up to a minute early.",
    )
    history: integer(0, 50) = key(5, "Past sessions listed on the home page, with when and why each ended.")
    presets: list[Preset] = key(
        [],
        "One-click sessions on the home page, above the form.",
        example=[
            {"label": "Quick CPU session · 2 h", "partition": "", "gpus": 0, "hours": 2},
            {"label": "1 GPU · 8 h", "partition": "", "gpus": 1, "hours": 8},
            {"label": "Full node · 4 GPUs", "partition": "sxm2", "gpus": 4, "hours": 8},
        ],
    )
    jupyterlab_news: Flag = key(
        False,
        "JupyterLab asks each user whether to fetch Jupyter's news from the internet; false = it never "
        "asks and fetches nothing (compute nodes often have no internet).",
    )
    idle_timeout: integer(0, 30 * 86400) = key(
        7200,
        "Seconds without use after which a session is stopped and its GPUs go back to Slurm (the hub runs "
        "jupyterhub-idle-culler); 0 = never. Use means a busy kernel, terminal traffic, the user's mouse or keys "
        "in JupyterLab, or work on the job's GPUs; an open but untouched browser tab is no use.",
    )
    idle_timeout_by_partition: dict[SlurmName, integer(0, 30 * 86400)] = key(
        {}, "Other idle timeouts for sessions of these partitions (seconds; 0 = never).", example={"sxm2": 14400}
    )
    idle_exempt_groups: list[GroupName] = key(
        [], "Unix groups whose members' sessions are never stopped for being idle."
    )
    cull_every: integer(10, 86400) = key(
        300, "Seconds between the idle culler's checks (a session stops at most this long after its timeout)."
    )
    activity_seconds: integer(10, 3600) = key(
        60,
        "Seconds between a session's reports of its last use to the hub; idle timeouts must be at least "
        "twice this, or a session in use could look idle.",
    )
    idle_warning_seconds: integer(10, 86400) = key(
        600,
        "Seconds before an idle session is stopped at which JupyterLab warns the user (at most half the "
        "session's idle timeout).",
    )
    max_per_user: integer(1, 20) = key(
        3,
        "Sessions one user may run at once, each its own Slurm job with its own name, partition, GPUs and hours "
        "(e.g. a CPU session for editing beside a GPU session for training).",
    )
    max_gpus_per_user: integer(0, 1024) = key(
        0,
        "GPUs one user's sessions may hold together; a start that would pass it is refused with words "
        "before anything is submitted. 0 = no limit beyond each partition's max_gpus.",
    )
    max_kept_per_user: integer(1, 100) = key(
        10,
        "Named sessions one user may keep on the home page, running or stopped (JupyterHub's "
        "named_server_limit_per_user); a user removes a stopped one to name a new one.",
    )


class JobSettings(Section):
    """Notebooks and scripts run as Slurm jobs of their own (JupyterLab's "Run as a job", the REST API)."""

    enabled: Flag = key(True, "Users may run notebooks and scripts as Slurm jobs from the portal.")
    default_hours: number(0, 8760) = key(1, "Job length preselected in JupyterLab's dialog, in hours.")
    max_hours: number(0, 8760) = key(
        24, "Longest job a user may ask for, in hours (the partition's MaxTime applies too)."
    )
    output_folder: StorageName = key(
        "jobs", "Folder in the user's home where each job's output notebook is written (created by the job)."
    )
    max_notebook_mib: integer(1, 1024) = key(
        20, "Largest notebook or script the portal reads to submit (MiB); bigger ones are refused with words."
    )
    list_seconds: integer(2, 3600) = key(
        10,
        "Seconds one listing of every user's jobs (one squeue) is reused for everyone; Slurm calls then do not "
        "grow with the number of users or jobs.",
    )
    accounting_seconds: integer(5, 3600) = key(
        30, "Seconds one answer of Slurm's accounting (one sacct of every user's recent jobs) is reused."
    )
    history_days: integer(1, 365) = key(7, "Days of finished jobs shown in the jobs panel and on the home page.")
    keep: integer(1, 500) = key(50, "Jobs per user whose settings the hub remembers (for 'run again').")


class NotifySettings(Section):
    """E-mail to users who opted in: a job ended, a queued session started, a session has little time left."""

    smtp_host: text(r"[A-Za-z0-9.\[\]:_-]+", "must be a host name or address", allow_empty=True) = key(
        "", "Mail relay the hub sends through (SMTP); empty = no e-mail (JupyterLab and the home page still tell)."
    )
    smtp_port: integer(1, 65535) = key(25, "The relay's port.")
    starttls: Flag = key(
        False,
        "Use STARTTLS with the relay (port 587 relays usually want it). The relay's certificate must be signed "
        "by a trusted CA (the system's, or ca_file) and name smtp_host; one that does not gets no mail (logged).",
    )
    ca_file: OptionalAbsPath = key(
        "",
        "CA certificate file (PEM) that signed the relay's certificate, for a site CA the system does not trust "
        "(e.g. /etc/ssl/certs/site-ca.pem); empty = the system's CAs.",
    )
    sender: text(r"[^\s<>@]+@[A-Za-z0-9.-]+", "must be an e-mail address such as portal@example.org") = key(
        "dsportal@localhost", "The From address of the portal's mail."
    )
    timeout: Timeout = key(
        10, "Seconds before a relay that does not answer counts as down (the mail is dropped, logged)."
    )
    minutes_left: integer(1, 1440) = key(15, "Mail a session's owner this many minutes before its time limit.")
    queued_seconds: integer(1, 86400) = key(
        60, "A session that waited this many seconds for Slurm to start it counts as queued: its start is mailed."
    )


class SharingSettings(Section):
    """Users share a running session with a colleague (JupyterHub's shares): both work in it at once."""

    enabled: Flag = key(
        True,
        "Users may share a running session with another user or a group from the home page. The people they share "
        "with run code as the owner, in the owner's files; the page says so.",
    )
    groups: list[GroupName] = key(
        [],
        "Only members of these groups may share and be shared with, and only these groups may be shared with; "
        "empty = every portal user and any of the sharer's own groups.",
    )
    codes: Flag = key(
        False,
        "Also allow share codes (JupyterHub's links that let anyone logged in who has the link join); false = "
        "sessions are shared only with named users and groups.",
    )
    max_hours: number(0.1, 8760) = key(
        24, "Longest a share may last, in hours; each share ends by itself at the time its owner chose."
    )
    check_seconds: integer(1, 60) = key(
        3,
        "Seconds between a session's checks that its guests may still be there: a guest whose share was revoked "
        "or expired is refused and their open connections closed within about this long.",
    )


class UsageSettings(Section):
    """What sessions used (the history's summaries, the usage page) and the admins' status page."""

    sample_seconds: integer(2, 600) = key(
        30, "Seconds between a session's readings of its GPUs (NVML), its processes' CPU time and memory."
    )
    report_seconds: integer(2, 3600) = key(
        60,
        "Seconds between a session's reports of what it used to the hub; the last report before the end makes "
        "the ended session's summary.",
    )
    accounting_seconds: integer(2, 3600) = key(
        120,
        "Seconds one answer of Slurm's accounting with jobs' CPU time and memory (one sacct of every user's jobs "
        "of `days` days) is reused by the usage pages and the summaries.",
    )
    days: integer(7, 366) = key(31, "Days of Slurm's accounting the usage page reads (GPU-hours this week and month).")
    cluster_seconds: integer(2, 3600) = key(
        30,
        "Seconds between the hub's readings of the cluster for its metrics (GPUs per partition, the queue and "
        "its waits): one sinfo and one squeue, shared with the pages.",
    )
    prometheus_url: OptionalHttpUrl = key(
        "",
        "The Prometheus that scrapes the hub's /hub/metrics; the admins' status page reads it. "
        "Empty = the page says there is no Prometheus.",
        example="http://127.0.0.1:9090",
    )
    prometheus_timeout: number(0, 60) = key(5, "Seconds the status page waits for Prometheus's answers.")
    scraper_token_file: OptionalAbsPath = key(
        "",
        "File (mode 0600, the hub's account) holding the API token Prometheus scrapes /hub/metrics with; the hub "
        "registers it as the service `prometheus`, which may read metrics and nothing else. Empty = none.",
    )


class Reserved(Section):
    """A section a later release fills; it must stay empty."""


class PortalSettings(Section):
    hub: HubSettings = section(HubSettings, "The hub: addresses, admins, state.")
    ldap: LdapSettings = section(LdapSettings, "LDAP login with the cluster username and password.")
    slurm: SlurmSettings = section(SlurmSettings, "Slurm: partitions and what a session gets.")
    environment: EnvironmentSettings = section(EnvironmentSettings, "What sessions run with on the compute nodes.")
    kernels: KernelSettings = section(KernelSettings, "Kernels offered in JupyterLab besides Python 3 and R.")
    tensorboard: TensorBoardSettings = section(TensorBoardSettings, "TensorBoard in the sessions.")
    sessions: SessionSettings = section(
        SessionSettings, "Sessions' clock (warnings, saving before the end), history and presets on the home page."
    )
    jobs: JobSettings = section(JobSettings, "Notebooks and scripts run as Slurm jobs from JupyterLab and the API.")
    notify: NotifySettings = section(
        NotifySettings, "E-mail when a job ends, a queued session starts or time runs out."
    )
    sharing: SharingSettings = section(SharingSettings, "Sharing a running session with colleagues.")
    usage: UsageSettings = section(
        UsageSettings, "What each session used, the users' usage page and the admins' status page."
    )
    notebooks: Reserved = section(Reserved, "Framework notebook templates (filled by a later release; keep empty).")

    @model_validator(mode="after")
    def _idle_rules(self) -> PortalSettings:
        """Idle timeouts long enough for the activity reports; per-partition ones for offered partitions."""
        problems: list = []
        sessions = self.sessions
        shortest = 2 * sessions.activity_seconds
        timeouts = {"": sessions.idle_timeout, **sessions.idle_timeout_by_partition}
        for partition, timeout in timeouts.items():
            where = f".sessions.idle_timeout_by_partition.{partition}" if partition else ".sessions.idle_timeout"
            if 0 < timeout < shortest:
                problems.append(
                    (
                        where,
                        timeout,
                        f"at least {shortest} s (twice sessions.activity_seconds, "
                        "so a session in use never looks idle), or 0 for never",
                    )
                )
        names = [p.name for p in self.slurm.partitions]
        for partition in sessions.idle_timeout_by_partition:
            if partition not in names:
                problems.append(
                    (
                        f".sessions.idle_timeout_by_partition.{partition}",
                        partition,
                        f"must be one of slurm.partitions: {', '.join(names)}",
                    )
                )
        if problems:
            raise rule_error(*problems)
        return self

    @model_validator(mode="after")
    def _presets_fit(self) -> PortalSettings:
        """Each preset names a partition users may choose and asks no more than it allows."""
        problems: list = []
        partitions = {p.name: p for p in self.slurm.partitions}
        for i, preset in enumerate(self.sessions.presets):
            partition = partitions.get(preset.partition or self.slurm.default_partition.name)
            if partition is None:
                problems.append(
                    (
                        f".sessions.presets[{i}].partition",
                        preset.partition,
                        f"must be one of slurm.partitions: {', '.join(partitions)}",
                    )
                )
            elif preset.gpus > partition.max_gpus:
                problems.append(
                    (
                        f".sessions.presets[{i}].gpus",
                        preset.gpus,
                        f"at most {partition.max_gpus} on {partition.name}, its max_gpus",
                    )
                )
            if preset.hours > self.slurm.max_hours:
                problems.append(
                    (
                        f".sessions.presets[{i}].hours",
                        preset.hours,
                        f"at most slurm.max_hours, {self.slurm.max_hours:g}",
                    )
                )
        if problems:
            raise rule_error(*problems)
        return self
