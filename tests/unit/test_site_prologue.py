"""A site's own lines in every portal job script (environment.variables, environment.prologue, c.Spawner.environment):
written by equality, refused in words, and run by real bash."""

from __future__ import annotations

import subprocess

import pytest

from portal.config import ConfigError, parse_config
from portal.settings import EnvironmentSettings, PortalSettings
from spawner.hub.request.jobspec import Account, job_script, site_lines
from spawner.hub.runs.jobscript import run_script
from spawner.hub.runs.request import RunRequest

SITE = EnvironmentSettings(
    variables={"HTTPS_PROXY": "http://proxy.example.org:3128", "LM_LICENSE_FILE": "27000@lic's host"},
    prologue=["source /etc/profile.d/lmod.sh", "module load cuda/12.4"],
)


def test_the_sites_variables_then_its_prologue_with_unset_variables_allowed():
    assert site_lines(SITE, {"TEAM": "vision"}) == (
        "# the site's variables (environment.variables, c.Spawner.environment)\n"
        "export HTTPS_PROXY=http://proxy.example.org:3128\n"
        "export LM_LICENSE_FILE='27000@lic'\"'\"'s host'\n"
        "export TEAM=vision\n"
        "# the site's prologue (environment.prologue), as the admin file says\n"
        "set +u\n"
        "source /etc/profile.d/lmod.sh\n"
        "module load cuda/12.4\n"
        "set -u\n"
    )
    assert site_lines(EnvironmentSettings()) == ""  # a site without either: the script as before


def test_every_kind_of_job_script_carries_them_after_its_path(a_config_file):
    from portal.config import load_config

    settings = load_config(a_config_file).model_copy(update={"environment": SITE})
    session = job_script(settings.slurm, Account("alice", "/home/alice"), ["/opt/x/bin/dsportal-singleuser"],
                         site_lines(SITE))  # fmt: skip
    request = RunRequest(path="a.ipynb", kind="notebook", partition="sxm2", nodes=1, gpus=1, hours=1)
    run = run_script(settings, request, Account("alice", "/home/alice"), {})
    for script in (session, run):
        path_line = next(line for line in script.splitlines() if line.startswith("export PATH="))
        assert script.split(path_line + "\n", 1)[1].startswith(site_lines(SITE)), script


def run_bash(script: str, tmp_path) -> subprocess.CompletedProcess:
    path = tmp_path / "job.sh"
    path.write_text(script)
    return subprocess.run(
        ["bash", str(path)],
        capture_output=True,
        text=True,
        timeout=30,
        env={"SLURM_JOB_ID": "7", "HOME": str(tmp_path)},
    )


def test_bash_runs_the_prologue_as_written_before_the_session(tmp_path):
    init = tmp_path / "modules.sh"  # a module system's init reads variables it never set, as Lmod's does
    init.write_text('module() { [ -z "$MODULES_SEEN" ] && export LOADED_MODULE="$2"; }\n')
    site = EnvironmentSettings(
        variables={"HTTPS_PROXY": "http://p:3128"}, prologue=[f"source {init}", "module load cuda/12.4"]
    )
    ran = run_bash(job_script(_slurm(), Account("alice", str(tmp_path)), ["/usr/bin/env"], site_lines(site)), tmp_path)
    assert ran.returncode == 0, ran.stderr
    printed = dict(
        line.split("=", 1) for line in ran.stdout.splitlines() if "=" in line and not line.startswith("dsportal:")
    )
    assert (printed["HTTPS_PROXY"], printed["LOADED_MODULE"]) == ("http://p:3128", "cuda/12.4")

    failing = EnvironmentSettings(prologue=["module load no-such-module || exit 3"])
    stopped = run_bash(
        job_script(_slurm(), Account("alice", str(tmp_path)), ["/usr/bin/env"], site_lines(failing)), tmp_path
    )
    assert stopped.returncode == 3 and "PATH=" not in stopped.stdout  # the session never started


def _slurm():
    return PortalSettings.model_validate({"ldap": {"bind_dn_template": "uid={username},dc=x"}}).slurm


@pytest.mark.parametrize(
    "environment, words",
    [
        ({"variables": {"PATH": "/x"}}, 'environment.variables.PATH: "/x" (the portal or Slurm sets it; remove it)'),
        ({"variables": {"JUPYTERHUB_API_TOKEN": "x"}}, "the portal or Slurm sets it"),
        ({"variables": {"SLURM_MEM": "1"}}, "the portal or Slurm sets it"),
        ({"variables": {"MY-VAR": "1"}}, "must be an environment variable's name"),
        ({"prologue": ["module load a\nmodule load b"]}, "must be one line of shell"),
        ({"prologue": ["if true; then"]}, "bash cannot parse it"),
        ({"prologue": ["true"] * 51}, "at most 50 lines; source a script"),
        ({"prologue": ["cat <<EOF"]}, "here-document at line 1 delimited by end-of-file"),
        ({"prologue": ["module load cuda \\"]}, "ends in a backslash"),
        ({"variables": {"UID": "5"}}, "the portal or Slurm sets it"),
    ],
)
def test_a_bad_variable_or_prologue_is_refused_with_what_to_do(environment, words):
    with pytest.raises(ConfigError) as refused:
        parse_config({"ldap": {"bind_dn_template": "uid={username},dc=x"}, "environment": environment}, "x.yaml")
    assert any(words in line for line in refused.value.errors), refused.value.errors


def a_spawner(environment: dict):
    from types import SimpleNamespace

    hubs = {"JUPYTERHUB_API_TOKEN": "the-hubs-token", "HOME": "/h"}
    return SimpleNamespace(
        environment=environment,
        get_env=lambda: {**hubs, **environment},  # as JupyterHub's: the site's values over the hub's
        log=__import__("logging").getLogger("test"),
        user=SimpleNamespace(name="alice"),
        name="",
    )


def test_the_spawners_own_environment_is_honoured_and_what_the_job_sets_left_out_in_words(caplog):
    from spawner.hub.session.submit import SubmitMixin

    environment = {"TEAM": "vision", "SEATS": 3, "BAD NAME": "1", "PATH": "/x", "SLURM_MEM": "1", "BASH_ENV": "/x",
                   "JUPYTERHUB_SINGLEUSER_APP": "jupyter_server.serverapp.ServerApp"}  # fmt: skip
    with caplog.at_level("ERROR"):
        assert SubmitMixin.site_variables(a_spawner(environment)) == {
            "TEAM": "vision",
            "SEATS": "3",  # a callable's or a number's value, as text
        }
    # the hub's own JUPYTERHUB_* reach the job through sudo, as JupyterHub resolves them (no word: any hub does so);
    # the rest the job sets itself, or the portal's sessions do not take: left out, with words
    assert sorted(r.getMessage().split(" is not set")[0] for r in caplog.records) == [
        "c.Spawner.environment's 'BAD NAME'",
        "c.Spawner.environment's 'BASH_ENV'",
        "c.Spawner.environment's 'JUPYTERHUB_SINGLEUSER_APP'",
        "c.Spawner.environment's 'PATH'",
        "c.Spawner.environment's 'SLURM_MEM'",
    ]
