"""The install guide's runner (tests/support/guide.py): its parsers and builders, by equality."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.guide import Block, blocks, environment_file, merged, service_argv, service_env, unit_settings

ROOT = Path(__file__).resolve().parents[2]


def test_blocks_are_the_fenced_commands_in_order_with_their_section():
    text = "## 1. One\n\n```\na\nb\n```\n\n```none\nnot run\n```\n## 2. Two\n```bash\nc\n```\n"
    assert blocks(text) == [Block("1. One", "a\nb"), Block("2. Two", "c")]


def test_the_guide_has_a_block_for_each_step_the_test_runs():
    sections = [b.section.split(".")[0] for b in blocks((ROOT / "docs/admins/install.md").read_text())]
    assert sections[0] == "0" and sections[-1] == "13" and {"1", "2", "3", "4", "7", "9"} <= set(sections)


def test_a_drop_in_adds_to_the_unit_and_an_empty_value_resets():
    unit = "[Unit]\nAfter=x\n[Service]\nUser=dsportal\nEnvironment=A=1\nExecStart=/bin/a \\\n  --flag\nCapabilityBoundingSet=\n"
    dropin = "[Service]\nAmbientCapabilities=CAP_NET_BIND_SERVICE\nEnvironment=\nEnvironment=B=2\n"
    assert unit_settings(unit) == {
        "User": ["dsportal"],
        "Environment": ["A=1"],
        "ExecStart": ["/bin/a    --flag"],
        "CapabilityBoundingSet": [""],
    }
    assert merged(unit, [dropin])["Environment"] == ["B=2"]
    assert merged(unit, [dropin])["AmbientCapabilities"] == ["CAP_NET_BIND_SERVICE"]


def test_a_service_runs_as_its_account_with_its_capabilities_umask_and_folder():
    settings = {
        "User": ["dsportal"],
        "UMask": ["0077"],
        "WorkingDirectory": ["/var/lib/dsportal"],
        "AmbientCapabilities": ["CAP_NET_BIND_SERVICE"],
        "CapabilityBoundingSet": [""],
        "NoNewPrivileges": ["yes"],
    }
    assert service_argv(settings, "/opt/x proxy") == [
        "setpriv", "--reuid=dsportal", "--regid=dsportal", "--init-groups",
        "--inh-caps=+net_bind_service", "--ambient-caps=+net_bind_service",
        "--bounding-set=-all,+net_bind_service", "--no-new-privs",
        "sh", "-c", "umask 0077\ncd /var/lib/dsportal\nexec /opt/x proxy\n",
    ]  # fmt: skip


def test_the_environment_is_the_files_then_the_lines_and_nothing_of_the_callers():
    files = {"/etc/dsportal/hub.env": '# the hub\'s\nA=1\nB="two"\n\n'}
    settings = {"EnvironmentFile": ["/etc/dsportal/hub.env", "-/missing.env"], "Environment": ["C=3 D=4"]}
    assert environment_file(files["/etc/dsportal/hub.env"]) == {"A": "1", "B": "two"}
    env = service_env(settings, lambda path: files[path] if path in files else (_ for _ in ()).throw(FileNotFoundError))
    assert {k: v for k, v in env.items() if k not in ("PATH", "LANG")} == {"A": "1", "B": "two", "C": "3", "D": "4"}
    with pytest.raises(FileNotFoundError):
        service_env({"EnvironmentFile": ["/missing.env"]}, lambda path: (_ for _ in ()).throw(FileNotFoundError))
