"""The admin settings' reference, in Markdown, from their declarations (portal/settings/).

Every key of `PortalSettings`, section by section, with its type, what values
it allows (the same words as `dsportal check-config`), its default and its
help text; keys of list entries (slurm.partitions[], kernels.containers[] ...)
follow their list.  The example file (portal/example.py) is rendered from the
same declarations, so the two cannot disagree.
"""

from __future__ import annotations

import typing
from collections.abc import Iterator
from typing import Any, Literal

import yaml
from markdown_text import code, prose
from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from portal.config import describe, field_slot, unwrap
from portal.settings import PortalSettings


def all_keys(model: type[BaseModel] = PortalSettings, prefix: str = "") -> Iterator[tuple[str, type, str]]:
    """(dotted path, model, key name) of every setting, sections and list entries' keys included."""
    for name in model.model_fields:
        path = f"{prefix}{name}"
        yield path, model, name
        inner = _model_inside(field_slot(model, name)[0])
        if inner is not None:
            yield from all_keys(inner, f"{path}[]." if _is_list(field_slot(model, name)[0]) else f"{path}.")


def _is_list(tp: Any) -> bool:
    return typing.get_origin(tp) is list


def _model_inside(tp: Any) -> type[BaseModel] | None:
    """The model a key holds, directly (a section) or as its list's entries; None for plain values."""
    if _is_list(tp):
        tp = unwrap(typing.get_args(tp)[0])[0]
    return tp if isinstance(tp, type) and issubclass(tp, BaseModel) else None


def type_name(tp: Any) -> str:
    """A declared type in a few words: 'integer', 'list of strings', 'mapping of strings to integers'."""
    tp = unwrap(tp)[0]
    origin = typing.get_origin(tp)
    if origin is list:
        inner = type_name(typing.get_args(tp)[0])
        return f"list of {inner}s" if " " not in inner else f"list of {inner}"
    if origin is dict:
        names, values = (type_name(t) for t in typing.get_args(tp))
        return f"mapping of {names}s to {values}s"
    if origin is Literal:
        return "string"
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return "mapping"
    names = {bool: "boolean", int: "integer", float: "number", str: "string"}
    return names.get(tp, getattr(tp, "__name__", str(tp)))


def _yaml(value: Any) -> str:
    if isinstance(value, BaseModel):
        value = value.model_dump()
    elif isinstance(value, list):
        value = [v.model_dump() if isinstance(v, BaseModel) else v for v in value]
    return (
        yaml.safe_dump(value, default_flow_style=True, width=10_000, sort_keys=False)
        .strip()
        .removesuffix("...")
        .strip()
    )


def anchor(path: str) -> str:
    """The page's target for a key: setting-slurm-partitions-name for slurm.partitions[].name."""
    return "setting-" + path.replace("[]", "").replace(".", "-").replace("_", "-")


def _key_block(path: str, model: type[BaseModel], name: str, depth: int) -> list[str]:
    info = model.model_fields[name]
    tp, meta = field_slot(model, name)
    lines = [f"({anchor(path)})=", f"{'#' * depth} `{path}`", "", prose(info.description or ""), ""]
    if _model_inside(tp) is tp:
        return lines  # a section: its keys follow under it
    required = info.default is PydanticUndefined and info.default_factory is None
    default = "required" if required else code(_yaml(info.get_default(call_default_factory=True)))
    facts = [
        f"- **Type:** {type_name(tp)}",
        f"- **Allowed:** {prose(describe((tp, meta)))}",
        f"- **Default:** {default}",
    ]
    example = (info.json_schema_extra or {}).get("example")
    if example is not None:
        facts.append(f"- **Example:** {code(_yaml(example))}")
    return lines + facts + [""]


def settings_markdown(model: type[BaseModel] = PortalSettings) -> str:
    """The reference's body: one section per top-level key (##), its keys (###), list entries' keys (####)."""
    lines: list[str] = []
    for path, owner, name in all_keys(model):
        depth = 2 + path.count(".")
        lines += _key_block(path, owner, name, min(depth, 4))
    return "\n".join(lines).rstrip() + "\n"


def keys_without_help(model: type[BaseModel] = PortalSettings) -> list[str]:
    """The settings whose declaration gives no help text (every one must: the reference and the example show it)."""
    return [path for path, owner, name in all_keys(model) if not (owner.model_fields[name].description or "").strip()]
