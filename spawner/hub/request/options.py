"""User options (form or REST) -> a validated `SessionRequest`.

User input is untrusted: every value is checked against the admin config
here, before anything reaches a job script or a command line.  Errors are
`OptionsError` with a message a user can act on (the hub turns it into a 400).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from portal.config import show
from portal.settings import Partition, SlurmSettings

ALLOWED_KEYS = ("partition", "gpus", "hours")
_DIGITS = re.compile(r"[0-9]{1,3}")
_DECIMAL = re.compile(r"[0-9]{1,5}(\.[0-9]{1,4})?")


class OptionsError(ValueError):
    """A refused session option; str(e) is shown to the user."""


@dataclass(frozen=True)
class SessionRequest:
    partition: str
    gpus: int
    hours: float


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
    allowed = f"choose a whole number from 0 to {max_gpus} for partition {partition}"
    if isinstance(value, str) and _DIGITS.fullmatch(value.strip()):
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int):
        raise OptionsError(f"gpus: {show(value)} is not a whole number; {allowed}.")
    if not 0 <= value <= max_gpus:
        raise OptionsError(f"gpus: {value} is out of range; {allowed}.")
    return value


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


def parse_options(options: Any, slurm: SlurmSettings) -> SessionRequest:
    """Validate `options` ({"partition", "gpus", "hours"}, all optional)."""
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
    gpus = check_gpus(values.get("gpus", min(1, partition.max_gpus)), partition.max_gpus, partition.name)
    hours = check_hours(values.get("hours", slurm.default_hours), slurm.max_hours)
    return SessionRequest(partition=partition.name, gpus=gpus, hours=hours)


def options_from_form(formdata: dict[str, list[str]]) -> dict[str, Any]:
    """Form fields -> user_options; validation happens in `parse_options`."""
    return {k: v[0] if len(v) == 1 else v for k, v in formdata.items() if k != "_xsrf"}
