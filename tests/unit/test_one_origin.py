"""Apps and sharing need per-user origins (hub.subdomain_host): without them both are off by default, and an admin
who turns either on is told why and what to write."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from portal.config import ConfigError, parse_config
from portal.settings.apps import ALL_APPS

ROOT = Path(__file__).resolve().parents[2]
ORIGINS = {"subdomain_host": "https://portal.example.org"}
BASE = {
    "ldap": {"bind_dn_template": "uid={username},dc=x"},
    "slurm": {"partitions": [{"name": "sxm2", "max_gpus": 4}, {"name": "cpu", "max_gpus": 0}]},
}
SET = "set hub.subdomain_host (a wildcard DNS name and certificate) or set"
APPS = f"apps need per-user origins, or a page an app shows could act as the user's hub account: {SET}"
SHARING = f"sharing needs per-user origins, or a page of the owner's session could act as a guest's hub account: {SET}"


def config(hub: dict | None = None, **sections):
    return parse_config({**BASE, "hub": hub or {}, **sections})


def offers(settings) -> tuple:
    """What the sessions get of apps and sharing: (offered, by_partition, the apps of cpu, sharing.enabled)."""
    apps = settings.apps
    return apps.offered, apps.by_partition, apps.for_partition("cpu"), settings.sharing.enabled


def errors_of(data: dict) -> list[str]:
    with pytest.raises(ConfigError) as info:
        parse_config({**BASE, **data})
    return info.value.errors


def test_without_per_user_origins_apps_and_sharing_are_off_by_default():
    assert offers(config()) == ([], {}, (), False)
    # the sections' other keys keep what the admin wrote
    settings = config(apps={"max_running": 2}, sharing={"max_hours": 4})
    assert (settings.apps.max_running, settings.sharing.max_hours) == (2, 4)
    assert offers(settings) == ([], {}, (), False)


def test_with_per_user_origins_they_are_on_by_default_and_as_written():
    assert offers(config(ORIGINS)) == (list(ALL_APPS), {}, ALL_APPS, True)
    written = config(
        ORIGINS, apps={"offered": ["mlflow"], "by_partition": {"cpu": ["dash"]}}, sharing={"enabled": False}
    )
    assert offers(written) == (["mlflow"], {"cpu": ["dash"]}, ("dash",), False)


def test_without_per_user_origins_turning_them_off_in_writing_is_accepted():
    written = config(apps={"offered": [], "by_partition": {"cpu": []}}, sharing={"enabled": False, "codes": True})
    assert offers(written) == ([], {"cpu": []}, (), False)


def test_without_per_user_origins_turning_them_on_says_why_and_what_to_write():
    data = {
        "apps": {"offered": ["vscode"], "by_partition": {"cpu": ["mlflow"], "sxm2": []}},
        "sharing": {"enabled": True},
    }
    assert errors_of(data) == [
        f"portal.yaml: apps.offered: a list ({APPS} apps.offered: [])",
        f"portal.yaml: apps.by_partition.cpu: a list ({APPS} apps.by_partition.cpu: [])",
        f"portal.yaml: sharing.enabled: true ({SHARING} sharing.enabled: false)",
    ]
    # the same with hub.subdomain_host written empty
    assert errors_of({"hub": {"subdomain_host": ""}, "apps": {"by_partition": {"cpu": ["dash"]}}}) == [
        f"portal.yaml: apps.by_partition.cpu: a list ({APPS} apps.by_partition.cpu: [])"
    ]


def test_a_hub_section_in_error_is_reported_alone():
    """Whether the hub has per-user origins is unknown while hub: is wrong: only its own error is reported."""
    data = {"hub": {"subdomain_host": "portal.example.org"}, "apps": {"offered": ["vscode"]}}
    errors = errors_of(data)
    assert [e.split(":")[1].strip() for e in errors] == ["hub.subdomain_host"], errors


def test_check_config_prints_the_refusal(tmp_path):
    path = tmp_path / "portal.yaml"
    path.write_text(yaml.safe_dump({**BASE, "sharing": {"enabled": True}}))
    result = subprocess.run(
        [sys.executable, "-m", "portal.admin.cli", "check-config", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert (result.returncode, result.stdout) == (
        1,
        f"portal.yaml: sharing.enabled: true ({SHARING} sharing.enabled: false)\n",
    )


def test_the_dev_cluster_config_keeps_its_apps_and_sharing():
    text = (ROOT / "deploy" / "portal.dev.yaml").read_text()
    settings = parse_config(yaml.safe_load(text))
    assert settings.hub.subdomain_host and settings.sharing.enabled
    assert (settings.apps.offered, settings.apps.for_partition("cpu")) == (
        list(ALL_APPS),
        ("mlflow", "streamlit", "dash"),
    )
