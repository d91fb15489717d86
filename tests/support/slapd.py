"""Debian's slapd with the demo directory (deploy/dev/directory.py) on a loopback port, for the LDAP tests."""

from __future__ import annotations

import subprocess
from pathlib import Path

from deploy.dev import directory
from tests.support.http import free_port, wait_until

SUFFIX = directory.SUFFIX


class Slapd:
    """A slapd child process in the foreground: its owner holds it, no pid file."""

    def __init__(self, folder: Path, people: directory.Directory | None = None):
        self.folder = folder
        self.people = people
        self.uri = f"ldap://127.0.0.1:{free_port()}"
        self.service_password_file = folder / "service.pw"
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        directory.build(self.folder, self.people)
        self.proc = subprocess.Popen(
            directory.slapd_argv(self.folder, self.uri + "/"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        wait_until(
            lambda: self.proc.poll() is not None or directory.answers(self.folder, self.uri + "/"),
            20,
            "slapd answering",
        )
        assert self.proc.poll() is None, f"slapd exited ({self.proc.returncode})"

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(20)


def ldap_settings(slapd: Slapd, **overrides) -> dict:
    """The `ldap:` section of an admin config for `slapd` (direct bind, groups)."""
    settings = {
        "uris": [slapd.uri],
        "bind_dn_template": f"uid={{username}},ou=people,{SUFFIX}",
        "group_search_base": f"ou=groups,{SUFFIX}",
        "connect_timeout": 2,
        "response_timeout": 2,
    }
    settings.update(overrides)
    return settings
