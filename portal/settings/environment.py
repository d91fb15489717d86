"""The admin YAML's section environment: what sessions run with on the compute nodes."""

from __future__ import annotations

from .kinds import AbsPath, StorageName
from .section import Section, key


class EnvironmentSettings(Section):
    prefix: AbsPath = key(
        "/opt/dsportal/venv", "Python environment on the compute nodes that runs JupyterLab (readable by every user)."
    )
    storage: dict[StorageName, AbsPath] = key(
        {}, "Storage shown as links in users' homes: name: path.", example={"isilon": "/mnt/isilon"}
    )
