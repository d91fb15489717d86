"""The kinds of value a setting may hold: each a type whose "allowed" text is part of it.

A string kind is a `Rule` (a full-match pattern and what it means in words);
integer and number bounds are pydantic's constraints, which portal/config.py's
`describe` puts in words.  So every error message says what to write instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field
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
SLURM_NAME = re.compile(_SLURM_NAME[0])  # the same rule for names users give (an account chosen in the form)
_HTTP_URL = (r"https?://[A-Za-z0-9.\[\]:_-]+(:[0-9]{1,5})?/?", "must be a URL such as http://0.0.0.0:8000")
HttpUrl = text(*_HTTP_URL)
OptionalHttpUrl = text(*_HTTP_URL, allow_empty=True)
_ABS_PATH = (r"/[A-Za-z0-9_./+@-]*", "must be an absolute path (letters, digits, _ . / + @ -)")
AbsPath = text(*_ABS_PATH)
OptionalAbsPath = text(*_ABS_PATH, allow_empty=True)
Command = text(r"[A-Za-z0-9_./+-]+", "must be a command name or an absolute path, without spaces")
Size = text(r"[1-9][0-9]{0,6}[MGT]", "must be a size such as 512M, 48G or 1T")
OptionalSize = text(r"[1-9][0-9]{0,6}[MGT]", "must be a size such as 512M, 48G or 1T", allow_empty=True)
_DN = (r"[^\x00-\x1f]+", "must be an LDAP DN on one line, e.g. ou=people,dc=example,dc=org")
DN = text(*_DN)
OptionalDN = text(*_DN, allow_empty=True)


def _one_or_more(value: Any) -> Any:
    """One DN as a list of one, "" as none (the key's older form); anything else as given, for the list's check."""
    if isinstance(value, str):
        return [value] if value else []
    return value


DNTemplates = Annotated[list[DN], BeforeValidator(_one_or_more)]
LdapUri = text(
    r"ldaps?://[A-Za-z0-9.\[\]:_-]+(:[0-9]{1,5})?/?",
    "must be an LDAP URI such as ldap://ldap1.example.org:389 or ldaps://ldap1:636",
)
LdapAttribute = text(r"[A-Za-z][A-Za-z0-9-]{0,63}", "must be an LDAP attribute name such as uid")
StorageName = text(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}", "must be a link name: letters, digits, _ . -")
ENV_NAME_PATTERN = r"[A-Za-z_][A-Za-z0-9_]{0,127}"
EnvName = text(ENV_NAME_PATTERN, "must be an environment variable's name: letters, digits, _")


def is_env_name(name: str) -> bool:
    return re.fullmatch(ENV_NAME_PATTERN, name) is not None


ShellLine = text(
    r"[^\x00-\x1f\x7f]{1,500}",
    "must be one line of shell, at most 500 characters, without line breaks or control characters",
)
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


def size_to_mib(size: str) -> int:
    """'48G' -> 49152 (Slurm's units: M, G, T are powers of 1024)."""
    factor = {"M": 1, "G": 1024, "T": 1024 * 1024}[size[-1]]
    return int(size[:-1]) * factor
