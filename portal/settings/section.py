"""A section of the admin YAML: a pydantic model whose keys are declared with `key`.

Each key carries its default, help text and example value (the example file
and `check-config` are made from them); a cross-key rule that fails raises
`rule_error`, which portal/config.py words for the admin.
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError


def key(default: Any = ..., help: str = "", example: Any = None, **kw) -> Any:
    """A setting: its default (... = required), help text, and the value the example file shows."""
    extra = {"example": example} if example is not None else None
    if isinstance(default, (list, dict)):
        return Field(default_factory=lambda: copy.deepcopy(default), description=help, json_schema_extra=extra, **kw)
    return Field(default, description=help, json_schema_extra=extra, **kw)


def rule_error(*problems: tuple[str, Any, str] | str) -> PydanticCustomError:
    """A cross-key rule failed: (sub-path, value, what is allowed) per problem, or a whole sentence."""
    return PydanticCustomError("dsportal_rule", "cross-key rule", {"problems": list(problems)})


class Section(BaseModel):
    """A mapping of settings: unknown keys are errors, an empty section takes every default."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)

    @model_validator(mode="before")
    @classmethod
    def _empty_is_defaults(cls, value: Any) -> Any:
        return {} if value is None else value


def section(model: type[Section], help: str) -> Any:
    # {} validated in the field's place, so a missing section's errors carry its name
    return Field(default_factory=dict, description=help)


class Reserved(Section):
    """A section a later release fills; it must stay empty."""
