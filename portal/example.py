"""Render the commented example config (deploy/portal.example.yaml) from the settings' declarations."""

from __future__ import annotations

from typing import Any

import yaml
from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from .config import describe, field_slot
from .settings import PortalSettings, Section


def _yaml_value(value: Any) -> str:
    return yaml.safe_dump(value, default_flow_style=True, width=200).strip().removesuffix("...").strip()


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _is_section(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, Section)


def _key_lines(model: type[Section], name: str, indent: str) -> list[str]:
    info = model.model_fields[name]
    slot = field_slot(model, name)
    lines = [f"{indent}# {info.description}"]
    if _is_section(slot[0]):
        if not slot[0].model_fields:
            return lines + [f"{indent}{name}: {{}}"]
        lines.append(f"{indent}{name}:")
        for sub in slot[0].model_fields:
            lines += _key_lines(slot[0], sub, indent + "  ")
        return lines
    allowed = describe(slot)
    required = info.default is PydanticUndefined and info.default_factory is None
    default = None if required else _plain(info.get_default(call_default_factory=True))
    if required:
        lines.append(f"{indent}#   Required; {allowed}.")
    else:
        lines.append(f"{indent}#   Default: {_yaml_value(default)}; {allowed}.")
    example = (info.json_schema_extra or {}).get("example")
    value = example if example is not None else default
    if (
        isinstance(value, (list, dict))
        and value
        and not all(isinstance(v, (str, int, float)) for v in (value if isinstance(value, list) else value.values()))
    ):
        block = yaml.safe_dump({name: value}, default_flow_style=False, sort_keys=False).rstrip().splitlines()
        return lines + [indent + b for b in block]
    return lines + [f"{indent}{name}: {_yaml_value(value)}"]


def render_example(model: type[Section] = PortalSettings) -> str:
    head = [
        "# DS Portal admin config: one file for the whole portal.",
        "# Default location /etc/dsportal/portal.yaml (DSPORTAL_CONFIG overrides it).",
        "# Check it with:  dsportal check-config /etc/dsportal/portal.yaml",
        "# Generated from the settings' declarations by `dsportal example-config`; every key is optional",
        "# unless marked required, and unknown keys are errors.",
        "",
    ]
    body: list[str] = []
    for name in model.model_fields:
        body += _key_lines(model, name, "") + [""]
    return "\n".join(head + body).rstrip() + "\n"
