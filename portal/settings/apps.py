"""The admin YAML's section apps: VS Code, MLflow and the users' own web apps in the sessions."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from .kinds import Command, SlurmName, integer
from .section import Section, key

# Every app the session knows how to serve on a Unix socket (spawner/jupyter/apps/catalog.py says how).
AppKind = Literal["vscode", "mlflow", "streamlit", "dash"]
ALL_APPS: tuple[str, ...] = ("vscode", "mlflow", "streamlit", "dash")


class AppSettings(Section):
    offered: Annotated[list[AppKind], Field(max_length=len(ALL_APPS))] = key(
        list(ALL_APPS),
        "Apps the sessions offer: vscode (code-server), mlflow (MLflow's tracking UI for a folder), streamlit "
        "and dash (the user's own app from a file). Each serves on a Unix socket in the session's private "
        "folder, behind the session's login. An app whose program a node lacks is left out of the launcher, "
        "with a line in the session's log. Apps need per-user origins: without hub.subdomain_host none is "
        "offered (an app's page on the hub's own origin could act as the user's hub account) and naming any "
        "here or in by_partition is an error.",
    )
    by_partition: dict[SlurmName, Annotated[list[AppKind], Field(max_length=len(ALL_APPS))]] = key(
        {},
        "Apps offered on the partitions named here, in place of `offered` (e.g. cpu: [mlflow, streamlit]); "
        "an empty list offers none there.",
        example={"sxm2": ["vscode", "mlflow", "streamlit", "dash"]},
    )
    max_running: integer(1, 20) = key(4, "Apps one session may run at once (each is its own processes).")
    start_seconds: integer(5, 600) = key(
        90, "Seconds an app may take to answer on its socket after it is started before the session gives up."
    )
    code_server: Command = key(
        "code-server", "The code-server command for vscode (a name on the node's PATH or an absolute path)."
    )

    def for_partition(self, partition: str) -> tuple[str, ...]:
        return tuple(self.by_partition.get(partition, self.offered))
