"""Image names and registry logins for `dsportal images pull` (pure: parsing and building only).

A credential comes from the environment or a file the admin names, never
from the command line (which every account on the machine can read in
/proc) and never into a log.  Each runtime gets it its own way: Apptainer
and SingularityCE read it from their environment, skopeo from an authfile
(see images.py).
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

NGC = "nvcr.io"
NGC_USER = "$oauthtoken"  # NGC's fixed username for API-key logins
PASSWORD_ENV = "DSPORTAL_REGISTRY_PASSWORD"
NGC_KEY_ENV = "NGC_API_KEY"

_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"  # the OCI distribution spec's path component
IMAGE_REF = re.compile(
    rf"(?P<registry>(?:localhost|[a-z0-9-]+(?:\.[a-z0-9-]+)+|[a-z0-9-]+(?=:))(?::[0-9]{{1,5}})?)"
    rf"/(?P<repository>{_COMPONENT}(?:/{_COMPONENT})*)"
    r":(?P<tag>[A-Za-z0-9_][A-Za-z0-9._-]{0,127})"
)


class RefusedRequest(ValueError):
    """A pull request that cannot go ahead; the message says what to do."""


@dataclass(frozen=True)
class ImageRef:
    registry: str  # host[:port]
    repository: str  # e.g. nvidia/pytorch
    tag: str

    def __str__(self) -> str:
        return f"{self.registry}/{self.repository}:{self.tag}"

    @property
    def name(self) -> str:
        """The repository's last part: 'nvidia/pytorch' -> 'pytorch'."""
        return self.repository.rsplit("/", 1)[-1]

    @property
    def file_stem(self) -> str:
        """'nvcr.io/nvidia/pytorch:24.01-py3' -> 'pytorch_24.01-py3'."""
        return f"{self.name}_{self.tag}"

    @property
    def kernel_name(self) -> str:
        """'nvcr.io/nvidia/pytorch:24.01-py3' -> 'ngc-pytorch-24.01-py3' (other registries: no prefix)."""
        name = re.sub(r"[^a-z0-9_.-]+", "-", f"{self.name}-{self.tag}".lower())
        return f"ngc-{name}" if self.registry == NGC else name

    @property
    def label(self) -> str:
        return f"{self.name} {self.tag}"


def parse_ref(text: str) -> ImageRef:
    """A registry image name with its registry and tag spelled out (no implicit Docker Hub, no implicit latest)."""
    found = IMAGE_REF.fullmatch(text)
    if not found:
        raise RefusedRequest(
            f"{text!r} is not an image name this command takes; give the registry, the path and "
            "the tag, e.g. nvcr.io/nvidia/pytorch:24.01-py3 or registry.example.org:5000/team/img:1."
        )
    return ImageRef(found["registry"], found["repository"], found["tag"])


@dataclass(frozen=True)
class Credential:
    username: str
    password: str = field(repr=False)  # never in a repr, so never in a traceback or a log line


def read_credential(
    ref: ImageRef, environ: Mapping[str, str], username: str | None, password_file: str | None
) -> Credential | None:
    """The login for `ref`'s registry, or None for an anonymous pull.

    The password comes from `password_file`, else DSPORTAL_REGISTRY_PASSWORD,
    else (for NGC) NGC_API_KEY.  NGC's username is fixed; another registry
    needs --username with a password, and neither means anonymous.
    """
    if password_file:
        try:
            password = Path(password_file).read_text().strip()
        except OSError as e:
            raise RefusedRequest(f"cannot read the password file {password_file} ({e.strerror}).") from None
        if not password:
            raise RefusedRequest(
                f"the password file {password_file} is empty; put the password (or NGC API key) in it."
            )
    else:
        password = (
            environ.get(PASSWORD_ENV) or (environ.get(NGC_KEY_ENV) if ref.registry == NGC else "") or ""
        ).strip()
    if ref.registry == NGC:
        if not password:
            raise RefusedRequest(
                f"no NGC API key: set {NGC_KEY_ENV} or pass --password-file FILE "
                "(create a key at ngc.nvidia.com, Setup > API Key)."
            )
        return Credential(username or NGC_USER, password)
    if password and not username:
        raise RefusedRequest(f"a password for {ref.registry} was given but no user; pass --username NAME.")
    if username and not password:
        raise RefusedRequest(
            f"no password for {username} at {ref.registry}: set {PASSWORD_ENV} or pass --password-file FILE."
        )
    return Credential(username, password) if username else None


def authfile_json(ref: ImageRef, credential: Credential) -> str:
    """containers-auth.json(5) for skopeo: the one registry's login."""
    token = base64.b64encode(f"{credential.username}:{credential.password}".encode()).decode()
    return json.dumps({"auths": {ref.registry: {"auth": token}}})


def runtime_env(runtime_name: str, credential: Credential | None) -> dict[str, str]:
    """Apptainer's and SingularityCE's own variables for a docker:// login."""
    if credential is None:
        return {}
    prefix = runtime_name.upper()
    return {f"{prefix}_DOCKER_USERNAME": credential.username, f"{prefix}_DOCKER_PASSWORD": credential.password}
