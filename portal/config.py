"""The admin config file: its schema (declared once, with help texts) and loading.

Default file: /etc/dsportal/portal.yaml; ``DSPORTAL_CONFIG`` or ``--config``
override it.  `load_config` raises `ConfigError` carrying every problem found.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import yaml

from .schema import (
    Bool,
    Choice,
    Errors,
    Int,
    Key,
    ListOf,
    MapOf,
    Number,
    Section,
    Settings,
    Text,
)

DEFAULT_PATH = "/etc/dsportal/portal.yaml"
ENV_VAR = "DSPORTAL_CONFIG"

# --- value kinds used below -------------------------------------------------
USERNAME = Text(r"[a-z_][a-z0-9_.-]{0,31}", "must be a unix username: lower-case letters, digits, _ . - (at most 32)")


def is_username(name: str) -> bool:
    """The portal's one rule for usernames (login, admin list, job submission)."""
    return re.fullmatch(USERNAME.pattern, name) is not None
GROUP = Text(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}", "must be a group name: letters, digits, _ . -")
SLURM_NAME = Text(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}", "must be a Slurm name: letters, digits, _ . - (at most 64)")
OPTIONAL_SLURM_NAME = Text(SLURM_NAME.pattern, SLURM_NAME.describe + ", or empty", allow_empty=True)
HTTP_URL = Text(r"https?://[A-Za-z0-9.\[\]:_-]+(:[0-9]{1,5})?/?", "must be a URL such as http://0.0.0.0:8000")
OPTIONAL_HTTP_URL = Text(HTTP_URL.pattern, HTTP_URL.describe + ", or empty", allow_empty=True)
ABS_PATH = Text(r"/[A-Za-z0-9_./+@-]*", "must be an absolute path (letters, digits, _ . / + @ -)")
OPTIONAL_ABS_PATH = Text(ABS_PATH.pattern, ABS_PATH.describe + ", or empty", allow_empty=True)
COMMAND = Text(r"[A-Za-z0-9_./+-]+", "must be a command name or an absolute path, without spaces")
SIZE = Text(r"[1-9][0-9]{0,6}[MGT]", "must be a size such as 512M, 48G or 1T")
DN = Text(r"[^\x00-\x1f]+", "must be an LDAP DN on one line, e.g. ou=people,dc=example,dc=org")
OPTIONAL_DN = Text(DN.pattern, DN.describe + ", or empty", allow_empty=True)
LDAP_URI = Text(r"ldaps?://[A-Za-z0-9.\[\]:_-]+(:[0-9]{1,5})?/?", "must be an LDAP URI such as ldap://ldap1.example.org:389 or ldaps://ldap1:636")
LDAP_ATTRIBUTE = Text(r"[A-Za-z][A-Za-z0-9-]{0,63}", "must be an LDAP attribute name such as uid")
STORAGE_NAME = Text(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}", "must be a link name: letters, digits, _ . -")
SBATCH_OPTION = Text(
    r"--[a-z][a-z-]*(=[^\s'\"\\`$;|&<>]+)?",
    "must be one sbatch option such as --constraint=v100 (no spaces, quotes or shell characters)",
)
TIMEOUT = Number(0, 600)

KERNEL_NAME = Text(r"[a-z0-9][a-z0-9_.-]{0,63}", "must be a kernel name: lower-case letters, digits, _ . - (at most 64)")
MODULE_NAME = Text(r"[A-Za-z0-9_][A-Za-z0-9_./+-]{0,127}", "must be a module name such as cuda/12.1 (letters, digits, _ . / + -)")
ARGUMENT = Text(r"[^\x00-\x1f]{1,512}", "must be one command-line argument on one line")
LABEL = Text(r"[^\x00-\x1f<>]{1,80}", "must be a short label on one line (no < >)")
RESERVED_KERNELS = ("python3", "ir")

# Options the portal sets itself; an admin line must not fight them.
MANAGED_SBATCH_OPTIONS = frozenset(
    "job-name nodes ntasks cpus-per-task mem mem-per-cpu mem-per-gpu gres gpus time partition "
    "account qos reservation output error chdir export get-user-env uid gid parsable wrap".split()
)


def size_to_mib(size: str) -> int:
    """'48G' -> 49152 (Slurm's units: M, G, T are powers of 1024)."""
    factor = {"M": 1, "G": 1024, "T": 1024 * 1024}[size[-1]]
    return int(size[:-1]) * factor


# --- cross-key rules ----------------------------------------------------------
def _slurm_rules(s: Settings, path: str, errors: Errors) -> None:
    names = [p.name for p in s.partitions]
    for dup in sorted({n for n in names if names.count(n) > 1}):
        errors.add(f"{path}.partitions", dup, "each partition name may appear once")
    defaults = [p.name for p in s.partitions if p.default]
    if len(defaults) > 1:
        errors.add(f"{path}.partitions", ", ".join(defaults), "at most one partition may have default: true")
    if s.default_hours > s.max_hours:
        errors.add(f"{path}.default_hours", s.default_hours, f"must not exceed max_hours ({s.max_hours:g})")
    for i, line in enumerate(s.extra_sbatch):
        option = line[2:].split("=", 1)[0]
        if option in MANAGED_SBATCH_OPTIONS:
            errors.add(f"{path}.extra_sbatch[{i}]", line, f"--{option} is set by the portal itself; remove this line")


def _kernel_rules(s: Settings, path: str, errors: Errors) -> None:
    names = [k.name for k in s.modules] + [k.name for k in s.containers]
    for name in sorted(set(names)):
        if names.count(name) > 1:
            errors.add(f"{path}", name, "each kernel name may appear once across modules and containers")
        if name in RESERVED_KERNELS:
            errors.add(f"{path}", name, f"{', '.join(RESERVED_KERNELS)} are the built-in Python 3 and R kernels")


def _ldap_rules(s: Settings, path: str, errors: Errors) -> None:
    ldaps = [u.startswith("ldaps://") for u in s.uris]
    if s.tls == "ldaps" and not all(ldaps):
        errors.add(f"{path}.uris", ", ".join(s.uris), "with tls: ldaps every URI must start with ldaps://")
    if s.tls != "ldaps" and any(ldaps):
        errors.add(f"{path}.tls", s.tls, "ldaps:// URIs need tls: ldaps")
    if s.bind_dn_template and "{username}" not in s.bind_dn_template:
        errors.add(f"{path}.bind_dn_template", s.bind_dn_template, "must contain {username}")
    if not s.bind_dn_template and not (s.service_dn and s.service_password_file and s.user_search_base):
        errors.append(
            f"{path}: no way to find users (set bind_dn_template, or service_dn, "
            "service_password_file and user_search_base for search-then-bind)"
        )


# --- the schema ---------------------------------------------------------------
PARTITION = Section(
    [
        Key("name", SLURM_NAME, "Slurm partition name, as sinfo shows it."),
        Key("max_gpus", Int(1, 16), "Most GPUs one session may ask for here (GPUs of one node)."),
        Key("default", Bool(), "Preselect this partition in the form. At most one; else the first.", False),
        Key("display_name", Text(r"[^\x00-\x1f<>]{1,80}", "must be a short label on one line", allow_empty=True),
            "Label shown in the form; empty = the partition name.", ""),
    ]
)

DEFAULT_KERNEL_COMMAND = ["python3", "-m", "ipykernel_launcher", "-f", "{connection_file}"]

MODULE_KERNEL = Section(
    [
        Key("name", KERNEL_NAME, "Kernel name (its folder name)."),
        Key("display_name", LABEL, "Name in the launcher."),
        Key("load", ListOf(MODULE_NAME, min_items=1), "Modules to load, in order."),
        Key("command", ListOf(ARGUMENT, min_items=1), "The kernel command after loading; {connection_file} is filled in.",
            DEFAULT_KERNEL_COMMAND),
        Key("language", Text(r"[A-Za-z][A-Za-z0-9+#_-]{0,31}", "must be a language name such as python or R"),
            "The kernel's language.", "python"),
    ]
)

CONTAINER_KERNEL = Section(
    [
        Key("name", KERNEL_NAME, "Kernel name (its folder name)."),
        Key("display_name", LABEL, "Name in the launcher."),
        Key("image", Text(r"/[A-Za-z0-9_./+@-]*\.sif", "must be the absolute path of a .sif image"), "The image file."),
        Key("runtime", Choice(("apptainer", "singularity")), "The container runtime.", "apptainer"),
        Key("binds", ListOf(ABS_PATH), "Extra paths to bind (storage mounts and the home are always bound).", []),
    ]
)

SCHEMA = Section(
    [
        Key("hub", Section([
            Key("bind_url", HTTP_URL, "Public address of the portal (the proxy listens here).", "http://0.0.0.0:8000"),
            Key("internal_bind_url", HTTP_URL,
                "Where the hub's own API listens; compute nodes must reach it.", "http://0.0.0.0:8081"),
            Key("internal_connect_url", OPTIONAL_HTTP_URL,
                "The hub API address as compute nodes reach it; empty = http://<this host's name>:<port>.", ""),
            Key("admin_users", ListOf(USERNAME), "Users who are portal admins.", []),
            Key("admin_groups", ListOf(GROUP), "Directory groups whose members are portal admins.", []),
            Key("data_dir", ABS_PATH, "Folder for the hub's state (cookie secret, database).", "/var/lib/dsportal"),
            Key("db_url", Text(r"[a-z+]+://[^\s]*", "must be an SQLAlchemy URL such as sqlite:////var/lib/dsportal/jupyterhub.sqlite, or empty", allow_empty=True),
                "Hub database; empty = an SQLite file in data_dir.", ""),
        ], help="The hub: addresses, admins, state.")),
        Key("ldap", Section([
            Key("uris", ListOf(LDAP_URI, min_items=1), "Directory servers, tried in order (failover).", ["ldap://127.0.0.1:389"]),
            Key("tls", Choice(("plain", "starttls", "ldaps")), "Transport security: plain, starttls or ldaps.", "plain"),
            Key("ca_file", OPTIONAL_ABS_PATH, "CA certificate file for starttls/ldaps; empty = system CAs.", ""),
            Key("bind_dn_template", OPTIONAL_DN,
                "Direct bind: the user's DN with {username}, e.g. uid={username},ou=people,dc=example,dc=org.", "",
                example="uid={username},ou=people,dc=example,dc=org"),
            Key("service_dn", OPTIONAL_DN, "Search-then-bind: the service account that searches for users.", ""),
            Key("service_password_file", OPTIONAL_ABS_PATH, "File holding the service account's password (mode 0600).", ""),
            Key("user_search_base", OPTIONAL_DN, "Where users are searched (search-then-bind) and read.", "",
                example="ou=people,dc=example,dc=org"),
            Key("username_attribute", LDAP_ATTRIBUTE, "Attribute holding the login name.", "uid"),
            Key("group_search_base", OPTIONAL_DN,
                "Where groups are searched (posixGroup memberUid and groupOfNames member); empty = no groups.", "",
                example="ou=groups,dc=example,dc=org"),
            Key("allowed_groups", ListOf(GROUP), "Only members of these groups may log in; empty = any valid user.", []),
            Key("connect_timeout", TIMEOUT, "Seconds to wait for a directory server to accept a connection.", 5),
            Key("response_timeout", TIMEOUT, "Seconds to wait for a directory answer.", 5),
            Key("max_failures", Int(1, 1000), "Failed logins of one username before a back-off.", 5),
            Key("max_address_failures", Int(1, 10000),
                "Failed logins from one client address (any username) before a back-off; higher, since many "
                "users may share an address.", 30),
            Key("failure_window", Int(1, 86400), "Seconds over which failed logins are counted.", 300),
            Key("backoff", Int(1, 86400), "Seconds a throttled username or address must wait.", 60),
        ], help="LDAP login with the cluster username and password.", rules=[_ldap_rules])),
        Key("slurm", Section([
            Key("partitions", ListOf(PARTITION, min_items=1), "Partitions users may choose.",
                [{"name": "gpu", "max_gpus": 4, "default": True, "display_name": ""}],
                example=[{"name": "sxm2", "max_gpus": 4, "default": True, "display_name": "V100 SXM2 (4 GPUs per node)"}]),
            Key("cores_per_gpu", Int(1, 256), "CPU cores that come with each GPU.", 8),
            Key("memory_per_gpu", SIZE, "Memory that comes with each GPU (M, G or T).", "48G"),
            Key("cpu_only_cores", Int(1, 256), "CPU cores of a session with 0 GPUs.", 4),
            Key("cpu_only_memory", SIZE, "Memory of a session with 0 GPUs.", "16G"),
            Key("default_hours", Number(0, 8760), "Session length preselected in the form, in hours.", 8),
            Key("max_hours", Number(0, 8760), "Longest session a user may ask for, in hours.", 12),
            Key("account", OPTIONAL_SLURM_NAME, "Slurm account charged for sessions; empty = the user's default.", ""),
            Key("qos", OPTIONAL_SLURM_NAME, "Slurm QOS for sessions; empty = default.", ""),
            Key("reservation", OPTIONAL_SLURM_NAME, "Slurm reservation for sessions; empty = none.", ""),
            Key("extra_sbatch", ListOf(SBATCH_OPTION), "Extra #SBATCH lines (admin only), e.g. --constraint=v100.", []),
            Key("sbatch", COMMAND, "The sbatch command.", "sbatch"),
            Key("squeue", COMMAND, "The squeue command.", "squeue"),
            Key("scancel", COMMAND, "The scancel command.", "scancel"),
            Key("sudo", COMMAND, "sudo, used to submit and cancel jobs as the user.", "sudo"),
            Key("command_timeout", TIMEOUT, "Seconds before a Slurm command counts as hung.", 20),
            Key("start_timeout", Int(10, 86400), "Seconds a session may wait in the queue and start before it is given up.", 900),
        ], help="Slurm: partitions and what a session gets.", rules=[_slurm_rules])),
        Key("environment", Section([
            Key("prefix", ABS_PATH,
                "Python environment on the compute nodes that runs JupyterLab (readable by every user).",
                "/opt/dsportal/venv"),
            Key("storage", MapOf(STORAGE_NAME, ABS_PATH), "Storage shown as links in users' homes: name: path.", {},
                example={"isilon": "/mnt/isilon"}),
        ], help="What sessions run with on the compute nodes.")),
        Key("kernels", Section([
            Key("python_display_name", LABEL, "Name of the session's own Python 3 kernel in the launcher.", "Python 3"),
            Key("r", Bool(), "Offer an R kernel (IRkernel) when R is installed on the compute node.", True),
            Key("r_display_name", LABEL, "Name of the R kernel in the launcher.", "R"),
            Key("r_command", COMMAND, "The R executable on the compute nodes.", "R"),
            Key("module_command", ABS_PATH,
                "Lmod's `lmod` or Environment Modules' `modulecmd` on the compute nodes.",
                "/usr/share/lmod/lmod/libexec/lmod"),
            Key("modulepath", ListOf(ABS_PATH), "Module folders searched, before the node's own MODULEPATH.", []),
            Key("modules", ListOf(MODULE_KERNEL), "Kernels that load environment modules, then run a command.", [],
                example=[{"name": "pytorch-modules", "display_name": "PyTorch (cluster modules)",
                          "load": ["cuda/12.1", "pytorch/2.1"],
                          "command": ["python3", "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                          "language": "python"}]),
            Key("containers", ListOf(CONTAINER_KERNEL), "Kernels that run inside a Singularity/Apptainer image (.sif).", [],
                example=[{"name": "ngc-pytorch-24.01", "display_name": "PyTorch 24.01 (NGC container)",
                          "image": "/shared/containers/pytorch_24.01-py3.sif", "runtime": "apptainer",
                          "binds": ["/scratch"]}]),
        ], help="Kernels offered in JupyterLab besides Python 3 and R.", rules=[_kernel_rules])),
        Key("tensorboard", Section([], help="TensorBoard (filled by a later release; keep empty).")),
        Key("notebooks", Section([], help="Framework notebook templates (filled by a later release; keep empty).")),
    ]
)


class ConfigError(ValueError):
    """The config file is unreadable or invalid; `errors` lists every problem."""

    def __init__(self, source: str, errors: list[str]):
        self.source = source
        self.errors = [f"{source}: {e}" for e in errors]
        super().__init__("\n".join(self.errors))


def config_path(explicit: str | os.PathLike | None = None) -> Path:
    return Path(explicit or os.environ.get(ENV_VAR) or DEFAULT_PATH)


def parse_config(data: Any, source: str = "portal.yaml") -> Settings:
    errors = Errors()
    settings = SCHEMA.check(data, "", errors)
    if errors:
        raise ConfigError(source, errors)
    return settings


def load_config(path: str | os.PathLike | None = None) -> Settings:
    path = config_path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise ConfigError(str(path), [f"cannot read the file ({e.strerror}); create it from deploy/portal.example.yaml"]) from e
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = getattr(e, "problem", None) or str(e)
        raise ConfigError(path.name, [f"{where}not valid YAML ({problem})"]) from e
    return parse_config(data, path.name)


def default_partition(slurm: Settings) -> Settings:
    return next((p for p in slurm.partitions if p.default), slurm.partitions[0])

