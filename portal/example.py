"""Render the commented example config from the schema declaration."""

from __future__ import annotations

from typing import Any

import yaml

from .schema import REQUIRED, Key, Section


def _yaml_value(value: Any) -> str:
    return yaml.safe_dump(value, default_flow_style=True, width=200).strip().removesuffix("...").strip()


def _key_lines(key: Key, indent: str) -> list[str]:
    lines = [f"{indent}# {key.help}"]
    if isinstance(key.kind, Section):
        if key.kind.help:
            lines[0] = f"{indent}# {key.kind.help}"
        if not key.kind.keys:
            return lines + [f"{indent}{key.name}: {{}}"]
        lines.append(f"{indent}{key.name}:")
        for sub in key.kind.keys:
            lines += _key_lines(sub, indent + "  ")
        return lines
    allowed = key.kind.describe
    if key.default is REQUIRED:
        lines.append(f"{indent}#   Required; {allowed}.")
    else:
        lines.append(f"{indent}#   Default: {_yaml_value(key.default)}; {allowed}.")
    value = key.example if key.example is not None else key.default
    if isinstance(value, (list, dict)) and value and not all(isinstance(v, (str, int, float)) for v in (value if isinstance(value, list) else value.values())):
        block = yaml.safe_dump({key.name: value}, default_flow_style=False, sort_keys=False).rstrip().splitlines()
        return lines + [indent + b for b in block]
    return lines + [f"{indent}{key.name}: {_yaml_value(value)}"]


def render_example(schema: Section) -> str:
    head = [
        "# DS Portal admin config: one file for the whole portal.",
        "# Default location /etc/dsportal/portal.yaml (DSPORTAL_CONFIG overrides it).",
        "# Check it with:  dsportal check-config /etc/dsportal/portal.yaml",
        "# Generated from the schema by `dsportal example-config`; every key is optional",
        "# unless marked required, and unknown keys are errors.",
        "",
    ]
    body: list[str] = []
    for key in schema.keys:
        body += _key_lines(key, "") + [""]
    return "\n".join(head + body).rstrip() + "\n"
