"""The admin YAML's section tensorboard: TensorBoard in the sessions."""

from __future__ import annotations

from .kinds import integer
from .section import Section, key


class TensorBoardSettings(Section):
    max_instances: integer(1, 20) = key(
        3, "TensorBoards one session may run at once (each rereads its folder every 5 s, in the session's memory)."
    )
