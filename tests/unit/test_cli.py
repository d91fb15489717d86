"""The `dsportal` command as admins use it (portal/admin/cli.py): --version, --json, examples in --help,
shell completion.  In-process through `main`, with the doctor's commands swapped for a fake."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from portal.admin import cli, doctor
from portal.admin.cli import build_parser, main
from portal.admin.completion import DIRECTORY, FILE, SHELLS
from portal.admin.doctor import Result

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT_VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
SUBCOMMANDS = ["check-config", "example-config", "doctor", "proxy", "images", "completion"]


def run(capsys, *argv: str) -> tuple[int, str, str]:
    """`dsportal ARGV` in this process: its exit status, stdout and stderr."""
    try:
        status = main(list(argv))
    except SystemExit as e:  # argparse's --version, --help and usage errors
        status = e.code
    out, err = capsys.readouterr()
    return status, out, err


def test_version_is_pyprojects(capsys):
    assert run(capsys, "--version") == (0, f"dsportal {PYPROJECT_VERSION}\n", "")


def test_the_installed_command_prints_the_version_too():
    result = subprocess.run(
        [sys.executable, "-m", "portal.admin.cli", "--version"], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert (result.returncode, result.stdout) == (0, f"dsportal {PYPROJECT_VERSION}\n")


# --- check-config --json --------------------------------------------------------------------
def test_check_config_json_of_a_valid_file(capsys, a_config_file):
    status, out, err = run(capsys, "check-config", "--json", str(a_config_file))
    report = json.loads(out)
    assert (status, err) == (0, "")  # everything in the JSON, nothing on stderr
    assert {k: report[k] for k in ("ok", "file", "errors", "notes")} == {
        "ok": True,
        "file": str(a_config_file),
        "errors": [],
        "notes": [],
    }
    # the test config binds 0.0.0.0 over plain HTTP: valid, and a warning
    assert [w.startswith("INSECURE: hub.bind_url http://0.0.0.0:8000 serves") for w in report["warnings"]] == [True]


def test_check_config_json_lists_every_error_and_exits_1(capsys, tmp_path):
    bad = tmp_path / "portal.yaml"
    bad.write_text(yaml.safe_dump({"slurm": {"cores_per_gpu": 0}, "ldap": {"bind_dn_template": "uid={username}"}}))
    status, out, err = run(capsys, "check-config", str(bad))
    lines = out.splitlines()
    assert (status, lines) == (1, ["portal.yaml: slurm.cores_per_gpu: 0 (must be an integer from 1 to 256)"])
    assert run(capsys, "check-config", "--json", str(bad)) == (
        1,
        json.dumps({"ok": False, "file": str(bad), "errors": lines, "warnings": [], "notes": []}, indent=2) + "\n",
        "",
    )


# --- doctor --json --------------------------------------------------------------------------
def test_doctor_json_lists_each_check_and_keeps_the_exit_status(capsys, monkeypatch, a_config_file):
    found = [Result("slurm", True, "sinfo and squeue answer"), Result("ldap", False, "no directory server answered")]
    monkeypatch.setattr(doctor, "diagnose", lambda ctx: found if ctx.sample_user == "alice" else [])
    status, out, err = run(capsys, "doctor", "--json", "--user", "alice", str(a_config_file))
    assert (status, err) == (1, "")
    assert json.loads(out) == {
        "ok": False,
        "version": PYPROJECT_VERSION,
        "file": str(a_config_file),
        "user": "alice",
        "checks": [
            {"name": "config", "status": "ok", "message": f"{a_config_file} is valid"},
            {"name": "slurm", "status": "ok", "message": "sinfo and squeue answer"},
            {"name": "ldap", "status": "fail", "message": "no directory server answered"},
        ],
    }
    # the same checks as lines for a person, with the same exit status
    assert run(capsys, "doctor", "--user", "alice", str(a_config_file)) == (
        1,
        f"OK   config: {a_config_file} is valid\nOK   slurm: sinfo and squeue answer\n"
        "FIX  ldap: no directory server answered\n",
        "1 of 2 checks passed\n",
    )
    monkeypatch.setattr(doctor, "diagnose", lambda ctx: found[:1])
    assert json.loads(run(capsys, "doctor", "--json", "--user", "alice", str(a_config_file))[1])["ok"] is True
    assert run(capsys, "doctor", "--json", "--user", "alice", str(a_config_file))[0] == 0


def test_doctor_json_of_an_invalid_config_fails_its_config_check(capsys, tmp_path):
    bad = tmp_path / "portal.yaml"
    bad.write_text("slurm: {cores_per_gpu: 0}\nldap: {bind_dn_template: 'uid={username}'}\n")
    status, out, _ = run(capsys, "doctor", "--json", str(bad))
    report = json.loads(out)
    assert (status, report["ok"], report["user"]) == (1, False, None)
    assert report["checks"] == [
        {
            "name": "config",
            "status": "fail",
            "message": "portal.yaml: slurm.cores_per_gpu: 0 (must be an integer from 1 to 256)",
        }
    ]


SECRETS = {
    "ldap": "ldap-service-pw-Zq81",
    "scraper": "scraper-token-" + "k" * 32,
    "JUPYTERHUB_CRYPT_KEY": "crypt-key-7f3a",
    "CONFIGPROXY_AUTH_TOKEN": "proxy-token-55e1",
    "DSPORTAL_REGISTRY_PASSWORD": "registry-pw-0c2d",
}


def test_doctor_json_holds_no_password_or_token(capsys, monkeypatch, tmp_path, mock_slurm, a_refusing_uri):
    """Every check runs (LDAP with the service password, Slurm and sudo through a runner that echoes every
    command line it is given into its error, which the doctor quotes); no secret reaches the JSON."""
    from tests.support.mockslurm import config_data

    (tmp_path / "ldap.pw").write_text(SECRETS["ldap"] + "\n")
    (tmp_path / "scraper.token").write_text(SECRETS["scraper"])
    data = config_data(mock_slurm)
    data["ldap"] = {
        "uris": [a_refusing_uri],
        "tls": "plain",
        "service_dn": "cn=portal,dc=example,dc=org",
        "service_password_file": str(tmp_path / "ldap.pw"),
        "user_search_base": "ou=people,dc=example,dc=org",
    }
    data["usage"] = {"scraper_token_file": str(tmp_path / "scraper.token")}
    data["hub"]["internal_connect_url"] = "http://127.0.0.1:8081"
    (tmp_path / "portal.yaml").write_text(yaml.safe_dump(data))
    for name in ("JUPYTERHUB_CRYPT_KEY", "CONFIGPROXY_AUTH_TOKEN", "DSPORTAL_REGISTRY_PASSWORD"):
        monkeypatch.setenv(name, SECRETS[name])
    ran = []

    def echo(argv):
        ran.append(argv)
        return subprocess.CompletedProcess(argv, 1, "", "refused: " + " ".join(argv))

    monkeypatch.setattr(doctor, "run_command", echo)
    status, out, _ = run(capsys, "doctor", "--json", "--user", "alice", str(tmp_path / "portal.yaml"))
    report = json.loads(out)
    names = [check["name"] for check in report["checks"]]
    assert status == 1 and ran and {"slurm", "ldap", "hub address"} <= set(names), names
    assert "no directory server answered" in next(c["message"] for c in report["checks"] if c["name"] == "ldap")
    assert [name for name, secret in SECRETS.items() if secret in out] == []


# --- examples in --help ----------------------------------------------------------------------
def test_the_main_help_lists_the_subcommands_and_examples(capsys):
    status, out, _ = run(capsys, "--help")
    assert status == 0
    assert re.search(r"\{([a-z,-]+)\}", out).group(1).split(",") == SUBCOMMANDS
    examples = out[out.index("\nexamples:\n") :]
    assert [sub for sub in SUBCOMMANDS if f"dsportal {sub}" not in examples and sub != "images"] == []
    assert "--version" in examples


@pytest.mark.parametrize("command", [["check-config"], ["example-config"], ["doctor"], ["proxy"], ["images"],
                                     ["images", "pull"], ["completion"]])  # fmt: skip
def test_each_subcommands_help_has_examples_of_itself(capsys, command):
    status, out, _ = run(capsys, *command, "--help")
    examples = out.split("\nexamples:\n", 1)[1].splitlines()
    # kept as written (RawDescriptionHelpFormatter): each example a line of its own, indented
    first = examples[0].removeprefix("  ").removeprefix("sudo ")
    assert status == 0 and first.startswith(f"dsportal {' '.join(command)}"), out


def test_building_the_parser_has_no_side_effects(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("DSPORTAL_CONFIG", str(tmp_path / "missing.yaml"))
    monkeypatch.chdir(tmp_path)
    parser = build_parser()
    assert (capsys.readouterr(), list(tmp_path.iterdir())) == (("", ""), [])
    assert parser.parse_args(["doctor", "--json"]).func is cli._doctor


# --- shell completion ------------------------------------------------------------------------
def test_the_parsers_completion_hints_are_shtabs():
    import shtab  # a dependency of the portal (pyproject.toml)

    assert ({s: shtab.FILE[s] for s in SHELLS}, {s: shtab.DIRECTORY[s] for s in SHELLS}) == (FILE, DIRECTORY)


def bash_completes(script: Path, words: list[str], cwd: Path) -> list[str]:
    """What bash offers for the last of `words` (the word under the cursor) with the completion script loaded."""
    line = f"COMP_WORDS=({' '.join(repr(w) for w in words)}); COMP_CWORD={len(words) - 1}"
    program = f'source {script}; {line}; _shtab_dsportal; printf "%s\\n" "${{COMPREPLY[@]}}"'
    result = subprocess.run(["bash", "-c", program], capture_output=True, text=True, timeout=30, cwd=cwd)
    assert result.returncode == 0, result.stderr
    return sorted(result.stdout.split())


def test_bash_completes_subcommands_options_choices_and_files(capsys, tmp_path):
    status, script, _ = run(capsys, "completion", "bash")
    assert status == 0 and shutil.which("bash")
    (tmp_path / "completion.bash").write_text(script)
    (tmp_path / "portal.yaml").write_text("")
    complete = lambda *words: bash_completes(tmp_path / "completion.bash", list(words), tmp_path)  # noqa: E731
    assert complete("dsportal", "") == sorted(SUBCOMMANDS)
    assert complete("dsportal", "ch") == ["check-config"]
    assert "--json" in complete("dsportal", "doctor", "--")
    assert complete("dsportal", "images", "pull", "--runtime", "") == ["apptainer", "charliecloud", "singularity"]
    assert "portal.yaml" in complete("dsportal", "check-config", "port")
    assert complete("dsportal", "completion", "") == sorted(SHELLS)


def test_zsh_and_tcsh_scripts_name_the_command_and_its_subcommands(capsys):
    for shell, names in (("zsh", "#compdef dsportal"), ("tcsh", "\ncomplete dsportal ")):
        status, script, _ = run(capsys, "completion", shell)
        assert status == 0 and names in script
        assert [sub for sub in SUBCOMMANDS if sub not in script] == []


def test_an_unknown_shell_is_refused_with_the_choices(capsys):
    status, _, err = run(capsys, "completion", "fish")
    assert status == 2 and "invalid choice: 'fish' (choose from" in err
