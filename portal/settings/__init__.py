"""The admin settings, declared once on pydantic: each key's type, limits, default and help text.

Runs in the hub and in `dsportal check-config`.  The loader (portal/config.py)
turns pydantic's errors into sentences an admin can act on, and the commented
example file (portal/example.py) is rendered from these declarations.

One module per section of the admin YAML (hub.py for `hub:`, ldap.py for
`ldap:` ...), on kinds.py (the kinds of value, each with its "allowed" text)
and section.py (a section's base model and `key`).  This module holds the
whole file's model, `PortalSettings`, with the rules across sections, and is
the package's public surface: importers write `from portal.settings import X`.
"""

from __future__ import annotations

from typing import Any

from pydantic import PrivateAttr, ValidationInfo, field_validator, model_validator

from spawner.slurmgres import GPU_TYPE

from .apps import AppSettings
from .environment import EnvironmentSettings
from .hub import HubSettings
from .kernels import ContainerKernel, KernelSettings, ModuleKernel
from .kinds import SLURM_NAME, Rule, is_username, size_to_mib
from .ldap import LdapSettings
from .notify import NotifySettings
from .runs import RunSettings
from .section import Reserved, Section, rule_error, section
from .sessions import Preset, SessionSettings
from .sharing import SharingSettings
from .slurm import Partition, SlurmSettings
from .tensorboard import TensorBoardSettings
from .usage import UsageSettings

__all__ = [
    "SLURM_NAME",
    "AppSettings",
    "ContainerKernel",
    "EnvironmentSettings",
    "HubSettings",
    "KernelSettings",
    "LdapSettings",
    "ModuleKernel",
    "NotifySettings",
    "Partition",
    "PortalSettings",
    "Preset",
    "RENAMED_SECTIONS",
    "Reserved",
    "Rule",
    "RunSettings",
    "Section",
    "SessionSettings",
    "SharingSettings",
    "SlurmSettings",
    "TensorBoardSettings",
    "UsageSettings",
    "is_username",
    "size_to_mib",
]


# A section's name of an older release -> its name now: read in its place for a release, with a warning (`renamed`)
RENAMED_SECTIONS = {"jobs": "runs"}


class PortalSettings(Section):
    hub: HubSettings = section(HubSettings, "The hub: addresses, admins, state.")
    ldap: LdapSettings = section(LdapSettings, "LDAP login with the cluster username and password.")
    slurm: SlurmSettings = section(SlurmSettings, "Slurm: partitions and what a session gets.")
    environment: EnvironmentSettings = section(EnvironmentSettings, "What sessions run with on the compute nodes.")
    kernels: KernelSettings = section(KernelSettings, "Kernels offered in JupyterLab besides Python 3 and R.")
    tensorboard: TensorBoardSettings = section(TensorBoardSettings, "TensorBoard in the sessions.")
    apps: AppSettings = section(
        AppSettings, "VS Code, MLflow and the users' own web apps in the sessions, each on a private Unix socket."
    )
    sessions: SessionSettings = section(
        SessionSettings, "Sessions' clock (warnings, saving before the end), history and presets on the home page."
    )
    runs: RunSettings = section(
        RunSettings, "Notebooks and scripts run as Slurm jobs of their own from JupyterLab and the API (runs)."
    )
    notify: NotifySettings = section(
        NotifySettings, "E-mail when a job ends, a queued session starts or time runs out."
    )
    sharing: SharingSettings = section(SharingSettings, "Sharing a running session with colleagues.")
    usage: UsageSettings = section(
        UsageSettings, "What each session used, the users' usage page and the admins' status page."
    )
    notebooks: Reserved = section(Reserved, "Framework notebook templates (filled by a later release; keep empty).")
    _renamed: tuple[str, ...] = PrivateAttr(())  # the older names this file used, for `renamed_warnings`

    @model_validator(mode="wrap")
    @classmethod
    def _older_names(cls, data: Any, handler) -> PortalSettings:
        """A section under its older name (RENAMED_SECTIONS) is read as the new one; both at once is an error."""
        older = [name for name in RENAMED_SECTIONS if isinstance(data, dict) and name in data]
        both = [name for name in older if RENAMED_SECTIONS[name] in data]
        if both:
            raise rule_error(
                *(
                    f"{name}: is the older name of {RENAMED_SECTIONS[name]}:, which is here too: move its keys "
                    f"into {RENAMED_SECTIONS[name]}: and remove {name}:"
                    for name in both
                )
            )
        if older:
            data = {RENAMED_SECTIONS.get(key, key): value for key, value in data.items()}
        settings = handler(data)
        settings._renamed = tuple(older)
        return settings

    @property
    def renamed(self) -> tuple[str, ...]:
        """The sections this file names by an older name (read as their new one)."""
        return self._renamed

    @field_validator("apps", mode="after")
    @classmethod
    def _apps_need_origins(cls, apps: AppSettings, info: ValidationInfo) -> AppSettings:
        """Without per-user origins no app is offered: one the admin names is an error, the default is none."""
        if not _one_origin(info):
            return apps
        problems: list = []
        if "offered" in apps.model_fields_set and apps.offered:
            problems.append((".offered", apps.offered, ONE_ORIGIN.format(why=APPS_WHY, off="apps.offered: []")))
        for partition, kinds in apps.by_partition.items():
            if kinds:
                off = f"apps.by_partition.{partition}: []"
                problems.append((f".by_partition.{partition}", kinds, ONE_ORIGIN.format(why=APPS_WHY, off=off)))
        if problems:
            raise rule_error(*problems)
        return apps.model_copy(update={"offered": []})

    @field_validator("sharing", mode="after")
    @classmethod
    def _sharing_needs_origins(cls, sharing: SharingSettings, info: ValidationInfo) -> SharingSettings:
        """Without per-user origins sessions are not shared: `enabled: true` is an error, the default is off."""
        if not _one_origin(info):
            return sharing
        if "enabled" in sharing.model_fields_set and sharing.enabled:
            raise rule_error((".enabled", True, ONE_ORIGIN.format(why=SHARING_WHY, off="sharing.enabled: false")))
        return sharing.model_copy(update={"enabled": False})

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
        named = [("sessions.idle_timeout_by_partition", p) for p in sessions.idle_timeout_by_partition]
        named += [("apps.by_partition", p) for p in self.apps.by_partition]
        for where, partition in named:
            if partition not in names:
                problems.append(
                    (
                        f".{where}.{partition}",
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
            if preset.gpu_type and (
                not preset.gpus
                or preset.gpu_type in self.slurm.hidden_gpu_types
                or not GPU_TYPE.fullmatch(preset.gpu_type)
            ):
                problems.append(
                    (
                        f".sessions.presets[{i}].gpu_type",
                        preset.gpu_type,
                        "a preset with a GPU type asks for GPUs (gpus above 0), of a type as sessions name one "
                        "(letters, digits, '_.-', starting with a letter or digit) not in slurm.hidden_gpu_types",
                    )
                )
            if preset.qos and preset.qos not in self.slurm.qos_choices:
                problems.append(
                    (
                        f".sessions.presets[{i}].qos",
                        preset.qos,
                        f"must be one of slurm.qos_choices: {', '.join(self.slurm.qos_choices) or 'none offered'}",
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


# Without hub.subdomain_host every session is served under the hub's own origin: a page a session serves runs
# script as that origin, with the hub cookies of whoever opens it (the session's owner, or a guest it is shared with).
ONE_ORIGIN = "{why}: set hub.subdomain_host (a wildcard DNS name and certificate) or set {off}"
APPS_WHY = "apps need per-user origins, or a page an app shows could act as the user's hub account"
SHARING_WHY = "sharing needs per-user origins, or a page of the owner's session could act as a guest's hub account"


def _one_origin(info: ValidationInfo) -> bool:
    """hub.subdomain_host is empty (False when hub: itself is invalid: its own errors say what to fix)."""
    hub = info.data.get("hub")
    return isinstance(hub, HubSettings) and not hub.subdomain_host
