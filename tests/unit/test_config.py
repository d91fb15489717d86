"""The admin config: loading, every class of error, all errors at once, check-config."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from portal.config import ConfigError, load_config, parse_config, renamed_warnings
from portal.example import render_example
from portal.settings import PortalSettings, Section, SlurmSettings, size_to_mib

ROOT = Path(__file__).resolve().parents[2]


def errors_of(data) -> list[str]:
    with pytest.raises(ConfigError) as info:
        parse_config(data, "portal.yaml")
    return info.value.errors


def test_good_file_loads_with_defaults(a_config_file):
    cfg = load_config(a_config_file)
    assert [p.name for p in cfg.slurm.partitions] == ["sxm2", "pcie"]
    assert cfg.slurm.partitions[1].default is False
    assert cfg.slurm.cores_per_gpu == 8
    assert cfg.slurm.memory_per_gpu == "48G"
    assert cfg.slurm.default_hours == 8
    assert cfg.hub.bind_url == "http://0.0.0.0:8000"
    assert cfg.environment.storage == {"isilon": "/mnt/isilon"}
    assert cfg.kernels.model_dump() == {
        "container_runtime": "apptainer",
        "python_display_name": "Python 3",
        "user_packages": True,
        "r": True,
        "r_display_name": "R",
        "r_command": "R",
        "module_command": "/usr/share/lmod/lmod/libexec/lmod",
        "modulepath": [],
        "modules": [],
        "containers": [],
    }


def test_config_path_from_environment(a_config_file, monkeypatch):
    monkeypatch.setenv("DSPORTAL_CONFIG", str(a_config_file))
    assert load_config().slurm.account == "ds"


def test_the_issue_example_error_message():
    data = {
        "ldap": {"bind_dn_template": "uid={username},dc=x"},
        "slurm": {"partitions": [{"name": "a", "max_gpus": 4}, {"name": "b", "max_gpus": -2}]},
    }
    assert errors_of(data) == ["portal.yaml: slurm.partitions[1].max_gpus: -2 (must be an integer from 0 to 16)"]


@pytest.mark.parametrize(
    "data, expected",
    [
        ({"slurm": {"cores_per_gpu": "eight"}}, 'slurm.cores_per_gpu: "eight" (must be an integer from 1 to 256)'),
        (
            {"slurm": {"memory_per_gpu": "48GB"}},
            'slurm.memory_per_gpu: "48GB" (must be a size such as 512M, 48G or 1T)',
        ),
        ({"slurm": {"max_hours": 0}}, "slurm.max_hours: 0 (must be a number above 0 and at most 8760)"),
        ({"slurm": {"default_hours": 20}}, "slurm.default_hours: 20 (must not exceed max_hours (12))"),
        ({"slurm": {"partitions": []}}, "slurm.partitions: a list (must be a list of at least 1 entries"),
        ({"slurm": {"partitions": [{"max_gpus": 2}]}}, "slurm.partitions[0].name: missing (required"),
        (
            {"slurm": {"partitions": [{"name": "a b", "max_gpus": 2}]}},
            'slurm.partitions[0].name: "a b" (must be a Slurm name',
        ),
        (
            {"slurm": {"partitions": [{"name": "a", "max_gpus": 2}, {"name": "a", "max_gpus": 1}]}},
            'slurm.partitions: "a" (each partition name may appear once)',
        ),
        (
            {
                "slurm": {
                    "partitions": [
                        {"name": "a", "max_gpus": 2, "default": True},
                        {"name": "b", "max_gpus": 1, "default": True},
                    ]
                }
            },
            'slurm.partitions: "a, b" (at most one partition may have default: true)',
        ),
        (
            {"slurm": {"extra_sbatch": ["--gres=gpu:8"]}},
            'slurm.extra_sbatch[0]: "--gres=gpu:8" (--gres is set by the portal itself',
        ),
        ({"slurm": {"extra_sbatch": ["--comment=x; rm -rf ~"]}}, "slurm.extra_sbatch[0]: "),
        ({"slurm": {"qos": "a\nb"}}, "slurm.qos: "),
        (
            {"slurm": {"partitions": [{"name": "a", "max_gpus": 2, "default": "yes"}]}},
            'slurm.partitions[0].default: "yes" (must be true or false)',
        ),
        (
            {"hub": {"bind_url": "0.0.0.0:8000"}},
            'hub.bind_url: "0.0.0.0:8000" (must be a URL such as http://0.0.0.0:8000)',
        ),
        ({"hub": {"admin_users": "carol"}}, 'hub.admin_users: "carol" (must be a list of entries'),
        (
            {"environment": {"storage": {"isilon": "mnt/isilon"}}},
            'environment.storage.isilon: "mnt/isilon" (must be an absolute path',
        ),
        (
            {"ldap": {"uris": ["http://x"], "bind_dn_template": "uid={username}"}},
            'ldap.uris[0]: "http://x" (must be an LDAP URI',
        ),
        ({"ldap": {"bind_dn_template": "cn=fixed"}}, 'ldap.bind_dn_template: "cn=fixed" (must contain {username})'),
        ({"ldap": {}}, "ldap: no way to find users"),
        ({"ldap": {"tls": "ldaps", "bind_dn_template": "uid={username}"}}, "ldap.uris: "),
        ({"slurm": {"partiton": []}}, "slurm.partiton: unknown setting (allowed here: partitions, "),
        ({"kernels": {"python": 3}}, "kernels.python: unknown setting"),
        ({"hubb": {}}, "hubb: unknown setting (allowed here: hub, ldap, slurm"),
        ("just text", "(top level): "),
    ],
)
def test_each_error_names_file_key_value_and_what_is_allowed(data, expected):
    if isinstance(data, dict) and "ldap" not in data:
        data = {**data, "ldap": {"bind_dn_template": "uid={username},dc=x"}}
    errors = errors_of(data)
    assert any(e.startswith("portal.yaml: " + expected) for e in errors), errors


def test_a_missing_section_is_checked_under_its_own_name():
    assert errors_of({"hub": {}}) == [
        "portal.yaml: ldap: no way to find users (set bind_dn_template, or service_dn, "
        "service_password_file and user_search_base for search-then-bind)"
    ]


def test_all_errors_are_reported_at_once():
    data = {
        "hub": {"bind_url": 8000, "colour": "red"},
        "ldap": {"bind_dn_template": "uid={username},dc=x", "connect_timeout": -1},
        "slurm": {"cores_per_gpu": 0, "partitions": [{"name": "sxm2", "max_gpus": 99}]},
    }
    errors = errors_of(data)
    assert len(errors) == 5, errors
    assert [e.split(":")[1].strip() for e in errors] == [
        "hub.colour",
        "hub.bind_url",
        "ldap.connect_timeout",
        "slurm.partitions[0].max_gpus",
        "slurm.cores_per_gpu",
    ]


def test_unreadable_and_broken_yaml(tmp_path):
    with pytest.raises(ConfigError, match="cannot read the file"):
        load_config(tmp_path / "missing.yaml")
    bad = tmp_path / "portal.yaml"
    bad.write_text("slurm:\n  partitions: [\n")
    with pytest.raises(ConfigError, match=r"portal.yaml: line \d+, column \d+: not valid YAML"):
        load_config(bad)


def test_size_to_mib():
    assert [size_to_mib(s) for s in ("512M", "48G", "1T")] == [512, 49152, 1048576]


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "portal.admin.cli", *args], capture_output=True, text=True, timeout=60, cwd=ROOT
    )


def test_check_config_ok(a_config_file):
    result = run_cli("check-config", str(a_config_file))
    assert (result.returncode, result.stdout) == (0, "OK\n")
    # the test config binds 0.0.0.0 over plain HTTP: valid, and loudly insecure
    assert "warning: INSECURE: hub.bind_url http://0.0.0.0:8000 serves the login page over plain HTTP" in result.stderr


def test_check_config_prints_every_error(tmp_path):
    bad = tmp_path / "portal.yaml"
    bad.write_text(
        yaml.safe_dump({"slurm": {"cores_per_gpu": 0, "typo": 1}, "ldap": {"bind_dn_template": "uid={username}"}})
    )
    result = run_cli("check-config", str(bad))
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        "portal.yaml: slurm.typo: unknown setting (allowed here: " + ", ".join(SlurmSettings.model_fields) + ")",
        "portal.yaml: slurm.cores_per_gpu: 0 (must be an integer from 1 to 256)",
    ]
    assert "2 problem(s)" in result.stderr


def test_the_01_section_jobs_is_read_as_runs_with_a_warning_and_its_errors_keep_its_name(tmp_path, portal_yaml):
    data = yaml.safe_load(portal_yaml)
    data.pop("runs", None)
    data["jobs"] = {"max_hours": 6, "sweeps": {"max_tasks": 20}}  # 0.1's name of the section
    settings = parse_config(data)
    assert (settings.runs.max_hours, settings.runs.sweeps.max_tasks, settings.renamed) == (6, 20, ("jobs",))
    assert renamed_warnings(settings) == [
        "jobs: is called runs: since DS Portal 0.2.0 and is read as it until 0.3.0; rename the section to runs:"
    ]
    assert parse_config(yaml.safe_load(portal_yaml)).renamed == ()
    old = tmp_path / "portal.yaml"
    old.write_text(yaml.safe_dump(data))
    result = run_cli("check-config", str(old))
    assert result.returncode == 0 and "warning: jobs: is called runs: since DS Portal 0.2.0" in result.stderr
    data["jobs"]["max_hours"] = -1
    with pytest.raises(ConfigError) as bad:
        parse_config(data)
    assert bad.value.errors == ["portal.yaml: jobs.max_hours: -1 (must be a number above 0 and at most 8760)"]
    data["runs"] = {}
    with pytest.raises(ConfigError) as both:
        parse_config(data)
    assert both.value.errors == [
        "portal.yaml: jobs: is the older name of runs:, which is here too: move its keys into runs: and remove jobs:"
    ]


def test_example_file_is_generated_from_the_schema_and_valid():
    example = ROOT / "deploy" / "portal.example.yaml"
    assert example.read_text() == render_example(), "regenerate: dsportal example-config > deploy/portal.example.yaml"
    cfg = parse_config(yaml.safe_load(example.read_text()))
    assert cfg.slurm.partitions[0].name == "sxm2"
    # every key of every section is documented by a comment line right above it
    lines = example.read_text().splitlines()

    def check(section: type[Section], indent: str) -> None:
        for name, info in section.model_fields.items():
            nested = (
                info.annotation if isinstance(info.annotation, type) and issubclass(info.annotation, Section) else None
            )
            at = lines.index(
                f"{indent}{name}:"
                if nested and nested.model_fields
                else next(line for line in lines if line.startswith(f"{indent}{name}:"))
            )
            assert lines[at - 1].lstrip().startswith("#"), name
            if nested:
                check(nested, indent + "  ")

    check(PortalSettings, "")


@pytest.mark.parametrize(
    "url",
    [
        "sqlite:////var/lib/dsportal/jupyterhub.sqlite",
        "postgresql+psycopg2://dsportal@/jupyterhub?host=/run/postgresql",
        "mysql+pymysql://hub@db.example.org/jupyterhub",
    ],
)
def test_database_urls_of_each_driver_are_accepted(url):
    data = {
        "ldap": {"bind_dn_template": "uid={username},dc=x"},
        "slurm": {"partitions": [{"name": "a", "max_gpus": 4}]},
        "hub": {"db_url": url},
    }
    assert parse_config(data, "portal.yaml").hub.db_url == url


def test_presets_fit_the_partitions_types_and_qos():
    data = {
        "ldap": {"bind_dn_template": "uid={username},dc=x"},
        "slurm": {
            "partitions": [{"name": "a", "max_gpus": 4}, {"name": "cpu", "max_gpus": 0}],
            "qos_choices": {"short": "Short"},
        },
        "sessions": {
            "presets": [
                {"label": "ok", "gpus": 1, "gpu_type": "a100", "qos": "short"},
                {"label": "gone", "partition": "b", "gpus": 1},
                {"label": "no GPU on cpu", "partition": "cpu", "gpus": 1},
                {"label": "a type of nothing", "gpus": 0, "gpu_type": "a100"},
                {"label": "an unknown QOS", "gpus": 1, "qos": "long"},
            ]
        },
    }
    assert errors_of(data) == [
        'portal.yaml: sessions.presets[1].partition: "b" (must be one of slurm.partitions: a, cpu)',
        "portal.yaml: sessions.presets[2].gpus: 1 (at most 0 on cpu, its max_gpus)",
        'portal.yaml: sessions.presets[3].gpu_type: "a100" (a preset with a GPU type asks for GPUs (gpus above 0), '
        "of a type as sessions name one (letters, digits, '_.-', starting with a letter or digit) not in "
        "slurm.hidden_gpu_types)",
        'portal.yaml: sessions.presets[4].qos: "long" (must be one of slurm.qos_choices: short)',
    ]
