"""User options (form or REST) -> a validated `SessionRequest`.

User input is untrusted: every value is checked against the admin config
here, before anything reaches a job script or a command line.  Errors are
`OptionsError` with a message a user can act on (the hub turns it into a 400).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from portal.config import show
from portal.settings import SLURM_NAME, Partition, SlurmSettings

from ...slurmgres import GPU_TYPE

ALLOWED_KEYS = ("partition", "gpus", "shards", "hours", "gpu_type", "account", "qos", "continue_from")
JOB_ID = re.compile(r"[1-9][0-9]{0,11}")  # a session's Slurm job id (never an array's or a component's)
_DIGITS = re.compile(r"[0-9]{1,3}")
_DECIMAL = re.compile(r"[0-9]{1,5}(\.[0-9]{1,4})?")


class OptionsError(ValueError):
    """A refused session option; str(e) is shown to the user."""


@dataclass(frozen=True)
class SessionRequest:
    partition: str
    gpus: int
    hours: float
    gpu_type: str = ""  # a GPU type Slurm knows (gres.conf Type=), "" for any
    account: str = ""  # a Slurm account of the user's, "" for the admin's (slurm.account) or the user's default
    qos: str = ""  # a QOS the admin offers (slurm.qos_choices), "" for the admin's (slurm.qos) or the association's
    continue_from: str = ""  # the job of the user's session this one continues (its carried variables are loaded)
    shards: int = 0  # shares of one GPU (Slurm's gres/shard), instead of whole GPUs


@dataclass(frozen=True)
class AccountFacts:
    """What Slurm's accounting says of one user's accounts (spawner/hub/slurm/associations.py)."""

    allowed: dict[str, tuple[str, ...]] = field(default_factory=dict)  # account -> the QOS it allows the user
    max_minutes: dict[str, int | None] = field(default_factory=dict)  # QOS -> its MaxWall (None: none)
    default_account: str = ""
    gpu_minutes_left: dict[str, float] = field(default_factory=dict)  # account -> what is left of its allocation

    def charged(self, account: str, slurm: SlurmSettings) -> str:
        """The account a job charges: the one chosen, else the admin's, else the user's default."""
        return account or slurm.account or self.default_account


@dataclass(frozen=True)
class SlurmFacts:
    """What Slurm says of the names a session's options use, from the hub's shared answers; each None when the
    options do not use it or Slurm did not answer (the name's form is checked then, and sbatch refuses the rest)."""

    gpu_types: dict[str, set[str]] | None = None  # partition -> its GPU types (spawner/hub/slurm/clusterinfo.py)
    accounts: tuple[str, ...] | None = None  # the user's Slurm accounts, default first
    facts: AccountFacts | None = None  # what their associations allow
    shards: dict[str, int] | None = None  # partition -> the most shards one of its nodes has
    most: dict[str, dict[str, int]] | None = None  # partition -> GPU type -> the most GPUs of it on one node


def single_value(value: Any) -> Any:
    # HTML forms deliver lists of strings; one value per field is allowed.
    if isinstance(value, list):
        if len(value) != 1:
            raise OptionsError("Each option may be given once.")
        return value[0]
    return value


def check_text(key: str, value: Any) -> None:
    if isinstance(value, str) and any(c in value for c in "\n\r\x00"):
        raise OptionsError(f"{key}: line breaks and NUL characters are not allowed.")


def check_partition(value: Any, slurm: SlurmSettings) -> Partition:
    names = [p.name for p in slurm.partitions]
    if not isinstance(value, str) or value not in names:
        raise OptionsError(f"partition: {show(value)} is not offered here; choose one of {', '.join(names)}.")
    return next(p for p in slurm.partitions if p.name == value)


def check_gpus(value: Any, max_gpus: int, partition: str) -> int:
    allowed = (
        f"choose a whole number from 0 to {max_gpus} for partition {partition}"
        if max_gpus
        else f"partition {partition} has no GPUs (CPU only): choose 0 GPUs, or a partition with GPUs"
    )
    if isinstance(value, str) and _DIGITS.fullmatch(value.strip()):
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int):
        raise OptionsError(f"gpus: {show(value)} is not a whole number; {allowed}.")
    if not 0 <= value <= max_gpus:
        raise OptionsError(f"gpus: {value} is out of range; {allowed}.")
    return value


def check_shards(
    value: Any,
    gpus: int,
    partition: Partition,
    slurm: SlurmSettings,
    shards: dict[str, int] | None,
    saved: bool = False,
) -> int:
    """Shares of one GPU (slurm.shards.per_gpu a GPU; 0 for none), never with whole GPUs, only on a partition the
    admin offers GPUs on; `shards`: the most shards one node of each partition has, from Slurm's sinfo (None when
    Slurm did not say: sbatch refuses a partition without them).  The options of a session that already ran
    (`saved`) keep their shares whatever the admin changed since: they still hold them."""
    if isinstance(value, str):
        value = value.strip()
        if _DIGITS.fullmatch(value):
            value = int(value)
    if value in (None, ""):
        return 0
    per_gpu = slurm.shards.per_gpu
    allowed = f"choose a whole number from 1 to {per_gpu - 1} (a share is 1/{per_gpu} of a GPU), or whole GPUs"
    if isinstance(value, bool) or not isinstance(value, int):
        raise OptionsError(f"shards: {show(value)} is not a whole number; {allowed if per_gpu else 'leave it out'}.")
    if value == 0:
        return 0
    if saved and 1 <= value < 64:
        return value
    if not per_gpu:
        raise OptionsError("shards: this portal offers no shares of a GPU; ask for whole GPUs (gpus) instead.")
    if not 1 <= value < per_gpu:
        raise OptionsError(f"shards: {value} is out of range; {allowed}.")
    if gpus:
        raise OptionsError(
            f"shards: {value} share(s) of a GPU asked together with {gpus} whole GPU(s); ask for one or the other "
            "(gpus 0 with shards, or no shards)."
        )
    having = sorted(
        p.name for p in slurm.partitions if p.max_gpus and (shards is None or shards.get(p.name, 0) >= value)
    )
    if partition.name not in having:
        where = f"choose partition {' or '.join(having)}" if having else "no partition has them now"
        raise OptionsError(
            f"shards: partition {partition.name} has no GPUs shared in {value} shard(s) or more; {where}, or ask for "
            "whole GPUs."
        )
    return value


def check_gpu_type(
    value: Any,
    gpus: int,
    partition: str,
    slurm: SlurmSettings,
    types: set[str] | None,
    saved: bool = False,
    most: dict[str, int] | None = None,
    shards: int = 0,
) -> str:
    """A GPU type the partition has (`types`: from Slurm's sinfo, None when Slurm did not say), "" for any, and no
    more GPUs of it than one of its nodes has (`most`: per type; a MIG profile's slices are few); the options of a
    session that already ran (`saved`) keep a type the admin has hidden since."""
    if value in (None, "", "any"):
        return ""
    if shards:
        raise OptionsError(
            f"gpu_type: a share comes from partition {partition}'s shared GPUs, whatever their type; "
            "leave the type empty with shards."
        )
    if not isinstance(value, str) or not GPU_TYPE.fullmatch(value):
        raise OptionsError(f"gpu_type: {show(value)} is not a GPU type name; leave it empty for any type.")
    if gpus == 0:
        raise OptionsError(f"gpu_type: {show(value)} asks for a GPU type with 0 GPUs; ask for GPUs, or no type.")
    offered = sorted(t for t in (types or set()) - set(slurm.hidden_gpu_types) if GPU_TYPE.fullmatch(t))
    hidden = value in slurm.hidden_gpu_types and not saved
    if hidden or (types is not None and value not in offered):
        choices = ", ".join(f"{t} ({slurm.gpu_label(t)})" if slurm.gpu_label(t) != t else t for t in offered)
        has = f"choose one of {choices}, or any type" if offered else "leave the type empty (any type)"
        raise OptionsError(f"gpu_type: partition {partition} has no GPUs of type {show(value)} to ask for; {has}.")
    if most is not None and most.get(value, gpus) < gpus:
        raise OptionsError(
            f"gpus: the nodes of partition {partition} have at most {most[value]} GPU(s) of type "
            f"{slurm.gpu_label(value)}; ask for {most[value]} or fewer, or for another type."
        )
    return value


def check_account(value: Any, accounts: tuple[str, ...] | None) -> str:
    """One of the user's Slurm accounts (`accounts`: theirs from sacctmgr, default first; None when Slurm's
    accounting did not say: the name's form is checked, and sbatch refuses an account the user is not in)."""
    if value in (None, ""):
        return ""
    if not isinstance(value, str) or not SLURM_NAME.fullmatch(value):
        raise OptionsError(f"account: {show(value)} is not a Slurm account name; leave it empty for your default.")
    if accounts is not None and value not in accounts:
        yours = (
            f"yours are {', '.join(accounts)} ({accounts[0]} is your default)"
            if accounts
            else "Slurm lists none for you: leave it empty, or ask the cluster admins to add you to a project"
        )
        raise OptionsError(f"account: you are not in the Slurm account {show(value)}; {yours}.")
    return value


def check_qos(value: Any, slurm: SlurmSettings, hours: float, account: str, facts: AccountFacts | None) -> str:
    """A QOS the admin offers (slurm.qos_choices) that the charged account allows and whose MaxWall holds the
    hours (`facts`: None when Slurm's accounting did not say: the offer is checked, and sbatch refuses the rest)."""
    if value in (None, ""):
        return ""
    offered = ", ".join(f"{q} ({label})" for q, label in slurm.qos_choices.items())
    choose = f"choose one of {offered}, or none for the default" if offered else "this portal offers no QOS choice"
    if not isinstance(value, str) or not SLURM_NAME.fullmatch(value) or value not in slurm.qos_choices:
        raise OptionsError(f"qos: {show(value)} is not offered here; {choose}.")
    if facts is None:
        return value
    charged = facts.charged(account, slurm)
    allowed = facts.allowed.get(charged)
    if allowed is not None and value not in allowed:
        others = [q for q in slurm.qos_choices if q in allowed]
        instead = f"choose {', '.join(others)}, or none" if others else "leave it empty for the default"
        raise OptionsError(f"qos: the account {charged} does not allow the QOS {value}; {instead}.")
    limit = facts.max_minutes.get(value)
    if limit is not None and hours * 60 > limit:
        raise OptionsError(
            f"qos: {value} runs sessions of at most {limit / 60:g} h; ask for {limit / 60:g} h or less, "
            "or choose another QOS."
        )
    return value


def check_allocation(gpus: int, account: str, slurm: SlurmSettings, facts: AccountFacts | None) -> None:
    """A session with GPUs is refused when the charged account's GPU allocation (GrpTRESMins) is used up: Slurm
    would queue it for ever (AssocGrpGRESMinutes)."""
    if not gpus or facts is None:
        return
    charged = facts.charged(account, slurm)
    if facts.gpu_minutes_left.get(charged, 1) <= 0:
        others = [a for a in facts.allowed if a != charged and facts.gpu_minutes_left.get(a, 1) > 0]
        instead = f"charge {' or '.join(others)} instead" if others else "ask its owner for more"
        raise OptionsError(
            f"account: the GPU allocation of the Slurm account {charged} is used up; {instead}, or ask for 0 GPUs."
        )


def check_continue_from(value: Any) -> str:
    """The job id of the session this one continues, "" for none.  Its carried variables are read from this
    user's own home only (spawner/jupyter/continuation/), so any job id of theirs can name nothing of another's."""
    if value in (None, ""):
        return ""
    text = str(value) if isinstance(value, int) and not isinstance(value, bool) else value
    if not isinstance(text, str) or not JOB_ID.fullmatch(text):
        raise OptionsError(f"continue_from: {show(value)} is not a Slurm job id; leave it out to start afresh.")
    return text


def check_hours(value: Any, max_hours: float) -> float:
    allowed = f"choose a number of hours above 0 and at most {max_hours:g}"
    if isinstance(value, str) and _DECIMAL.fullmatch(value.strip()):
        value = float(value.strip())
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise OptionsError(f"hours: {show(value)} is not a number; {allowed}.")
    # Slurm counts whole minutes; anything under one minute is no session.
    if value * 60 < 1 or value > max_hours:
        raise OptionsError(f"hours: {value:g} is out of range; {allowed}.")
    return float(value)


def parse_options(
    options: Any,
    slurm: SlurmSettings,
    gpu_types: dict[str, set[str]] | None = None,
    saved: bool = False,
    accounts: tuple[str, ...] | None = None,
    facts: AccountFacts | None = None,
    shards: dict[str, int] | None = None,
    most: dict[str, dict[str, int]] | None = None,
) -> SessionRequest:
    """Validate `options` ({"partition", "gpus", "shards", "hours", "gpu_type", "account", "qos"}, all optional);
    `gpu_types`: each partition's GPU types as Slurm lists them (spawner/hub/slurm/clusterinfo.py,
    partition_gpu_types; None: not known now; a type is then checked by its
    form only, and Slurm's sbatch refuses one it does not know); `saved`: the options of a session that already
    ran; `accounts`: the user's Slurm accounts, `facts`: what their associations allow, `shards`: the most shards
    one node of each partition has, `most`: the most GPUs of each type on one node of each (each None: not known
    now; SlurmFacts holds them)."""
    if options is None:
        options = {}
    if not isinstance(options, dict):
        raise OptionsError('Session options must be a JSON object such as {"gpus": 1, "hours": 8}.')
    unknown = [k for k in options if k not in ALLOWED_KEYS]
    if unknown:
        names = ", ".join(show(k) if isinstance(k, str) else repr(k) for k in unknown)
        raise OptionsError(f"Unknown option(s) {names}; allowed are {', '.join(ALLOWED_KEYS)}.")
    values = {k: single_value(v) for k, v in options.items()}
    for key, value in values.items():
        check_text(key, value)
    partition = check_partition(values["partition"], slurm) if "partition" in values else slurm.default_partition
    asks_shards = values.get("shards") not in (None, "", 0, "0")
    default_gpus = 0 if asks_shards else min(1, partition.max_gpus)
    gpus = check_gpus(values.get("gpus", default_gpus), partition.max_gpus, partition.name)
    shared = check_shards(values.get("shards"), gpus, partition, slurm, shards, saved)
    hours = check_hours(values.get("hours", slurm.default_hours), slurm.max_hours)
    types = None if gpu_types is None else gpu_types.get(partition.name, set())
    most_here = None if most is None else most.get(partition.name, {})
    gpu_type = check_gpu_type(values.get("gpu_type"), gpus, partition.name, slurm, types, saved, most_here, shared)
    account = check_account(values.get("account"), accounts)
    chosen_qos = check_qos(values.get("qos"), slurm, hours, account, facts)
    check_allocation(gpus or shared, account, slurm, facts)
    return SessionRequest(
        partition=partition.name,
        gpus=gpus,
        shards=shared,
        hours=hours,
        gpu_type=gpu_type,
        account=account,
        qos=chosen_qos,
        continue_from=check_continue_from(values.get("continue_from")),
    )


def parse_with(options: Any, slurm: SlurmSettings, known: SlurmFacts, saved: bool = False) -> SessionRequest:
    """parse_options with what Slurm says (SlurmFacts)."""
    return parse_options(
        options,
        slurm,
        known.gpu_types,
        saved,
        accounts=known.accounts,
        facts=known.facts,
        shards=known.shards,
        most=known.most,
    )


def options_from_form(formdata: dict[str, list[str]]) -> dict[str, Any]:
    """Form fields -> user_options; validation happens in `parse_options`."""
    return {k: v[0] if len(v) == 1 else v for k, v in formdata.items() if k != "_xsrf"}
