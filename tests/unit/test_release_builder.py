"""The release's pure parts (deploy/dev/release.py, hubimage.py), by equality; the release itself is built and
installed in tests/integration/test_release.py."""

from __future__ import annotations

import hashlib
import json
import zipfile

import pytest

from deploy.dev.common import ClusterError
from deploy.dev.hubimage import config_argv
from deploy.dev.release import checksums, npm_version, wheel_problems


@pytest.mark.parametrize(
    "python, npm",
    [("0.2.0", "0.2.0"), ("0.2.0.dev0", "0.2.0-dev.0"), ("1.0.0rc1", "1.0.0-rc.1"), ("1.2.3b4", "1.2.3-b.4")],
)
def test_npm_spells_the_version_its_own_way(python, npm):
    assert npm_version(python) == npm


def test_a_version_npm_cannot_spell_is_refused_in_words():
    with pytest.raises(ClusterError, match="is not MAJOR.MINOR.PATCH"):
        npm_version("0.2")


def test_checksums_name_every_file_but_their_own_in_path_order(tmp_path):
    (tmp_path / "b.txt").write_text("b\n")
    (tmp_path / "deploy").mkdir()
    (tmp_path / "deploy" / "a.txt").write_text("")
    (tmp_path / "SHA256SUMS").write_text("old")
    b, empty = hashlib.sha256(b"b\n").hexdigest(), hashlib.sha256(b"").hexdigest()
    assert checksums(tmp_path) == f"{b}  b.txt\n{empty}  deploy/a.txt\n"


def make_wheel(path, version, extension_version=None):
    data = f"dsportal-{version}.data/data/share/jupyter/labextensions/dsportal/"
    with zipfile.ZipFile(path, "w") as wheel:
        wheel.writestr(f"dsportal-{version}.dist-info/METADATA", "")
        if extension_version:
            wheel.writestr(data + "package.json", json.dumps({"version": extension_version}))
            wheel.writestr(data + "static/style.js", "")
    return path


def test_a_wheel_without_its_extension_or_with_another_versions_is_refused(tmp_path):
    assert wheel_problems(make_wheel(tmp_path / "ok.whl", "0.2.0.dev0", "0.2.0-dev.0"), "0.2.0.dev0") == []
    assert wheel_problems(make_wheel(tmp_path / "old.whl", "0.2.0.dev0", "0.1.0"), "0.2.0.dev0") == [
        "the wheel's JupyterLab extension is version 0.1.0, not 0.2.0-dev.0"
    ]
    assert wheel_problems(make_wheel(tmp_path / "none.whl", "0.2.0"), "0.2.0") == [
        "the wheel has no share/jupyter/labextensions/dsportal/package.json (the JupyterLab extension is not built in)",
        "the wheel has no share/jupyter/labextensions/dsportal/static/ (the JupyterLab extension is not built in)",
    ]


def test_the_hub_image_runs_the_hub_units_command_as_its_account():
    argv = config_argv("/L", "0.2.0")
    flags = {argv[i]: [] for i in range(2, len(argv), 2)}
    for i in range(2, len(argv), 2):
        flags[argv[i]].append(argv[i + 1])
    assert flags["--image"] == ["/L:0.2.0"]
    assert flags["--config.user"] == ["dsportal"]
    assert flags["--config.entrypoint"] == ["/opt/dsportal/venv/bin/jupyterhub"]
    assert flags["--config.cmd"] == ["-f", "/etc/dsportal/jupyterhub_config.py"]
    assert flags["--config.volume"] == ["/etc/dsportal", "/var/lib/dsportal"]
