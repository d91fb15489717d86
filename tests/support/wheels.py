"""A tiny pure-Python wheel written by hand, for `pip install` without any index (tests of the user's layer)."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def write_wheel(folder: Path, project: str, version: str, modules: dict[str, str]) -> Path:
    """folder/PROJECT-VERSION-py3-none-any.whl holding `modules` ({"hello.py": source}); its path."""
    dist = project.replace("-", "_")
    info = f"{dist}-{version}.dist-info"
    files = {name: text.encode() for name, text in modules.items()}
    files[f"{info}/METADATA"] = f"Metadata-Version: 2.1\nName: {project}\nVersion: {version}\n".encode()
    files[f"{info}/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: dsportal-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    record = [_record_line(name, data) for name, data in files.items()] + [f"{info}/RECORD,,"]
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    path = folder / f"{dist}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        for name, data in files.items():
            wheel.writestr(name, data)
    return path
