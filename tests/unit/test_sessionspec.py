"""The session spec: built by the hub from the admin config, read once on the node, every default declared once."""

from __future__ import annotations

import dataclasses
import json

import pytest

from portal.config import parse_config
from portal.settings import PortalSettings
from spawner.hub.request.specbuilder import build_session_spec
from spawner.job.session.start import read_spec
from spawner.sessionspec import AppsSpec, ClockSpec, ContinuationSpec, IdleSpec, SessionSpec, TensorBoardSpec

CONTAINER = {
    "name": "ngc",
    "display_name": "NGC",
    "image": "/images/ngc.sif",
    "runtime": "",
    "binds": ["/scratch"],
    "python": "python3",
}
CONFIG = {
    "hub": {"subdomain_host": "https://portal.example.org"},  # apps need per-user origins
    "ldap": {"bind_dn_template": "uid={username},dc=x"},
    "slurm": {
        "partitions": [{"name": "sxm2", "max_gpus": 4}],
        "squeue": "/usr/local/bin/squeue",
        "allow_extend": True,
        "extend_step_hours": 2,
    },
    "environment": {"storage": {"isilon": "/mnt/isilon"}},
    "kernels": {"r": False, "containers": [CONTAINER]},
    "tensorboard": {"max_instances": 5},
    "sessions": {"warn_minutes": [30, 10], "save_minutes": 5, "idle_warning_seconds": 900, "jupyterlab_news": True},
}


def settings(**sections) -> PortalSettings:
    data = {**CONFIG}
    for name, values in sections.items():
        data[name] = {**data.get(name, {}), **values}
    return parse_config(data)


def todays_hub_spec(settings: PortalSettings, idle_timeout: int) -> str:
    """What SlurmGPUSpawner.session_spec() wrote before SessionSpec (a job it started must still start)."""
    idle = {"timeout": idle_timeout, "warning": min(settings.sessions.idle_warning_seconds, idle_timeout // 2)}
    clock = {
        "squeue": settings.slurm.squeue,
        "warn_minutes": settings.sessions.warn_minutes,
        "save_minutes": settings.sessions.save_minutes,
        "extend_hours": settings.slurm.extend_step_hours if settings.slurm.allow_extend else 0,
    }
    return json.dumps(
        {
            "storage": settings.environment.storage,
            "kernels": settings.kernels.model_dump(),
            "tensorboard": settings.tensorboard.model_dump(),
            "clock": clock,
            "idle": idle,
            "jupyterlab_news": settings.sessions.jupyterlab_news,
            "guest_check_seconds": settings.sharing.check_seconds,
            "usage": {"sample_seconds": settings.usage.sample_seconds, "report_seconds": settings.usage.report_seconds},
            "apps": {
                "offered": settings.apps.offered,
                "max_running": settings.apps.max_running,
                "start_seconds": settings.apps.start_seconds,
                "code_server": settings.apps.code_server,
            },
        }
    )


def test_the_hub_builds_the_spec_from_the_admin_config():
    assert build_session_spec(settings(), 7200, "sxm2") == SessionSpec(
        storage={"isilon": "/mnt/isilon"},
        kernels={
            "container_runtime": "apptainer",
            "python_display_name": "Python 3",
            "user_packages": True,
            "r": False,
            "r_display_name": "R",
            "r_command": "R",
            "module_command": "/usr/share/lmod/lmod/libexec/lmod",
            "modulepath": [],
            "modules": [],
            "containers": [CONTAINER],
        },
        tensorboard=TensorBoardSpec(max_instances=5),
        clock=ClockSpec(squeue="/usr/local/bin/squeue", warn_minutes=(30, 10), save_minutes=5, extend_hours=2.0),
        idle=IdleSpec(timeout=7200, warning=900),
        jupyterlab_news=True,
        guest_check_seconds=3,
        apps=AppsSpec(offered=("vscode", "mlflow", "streamlit", "dash"), max_running=4, start_seconds=90),
        continuation=ContinuationSpec(
            enabled=True, max_bytes=4 * 10**9, dump_seconds=120, keep_hours=24.0, continue_from=""
        ),
    )


def test_a_continuing_session_names_the_job_it_continues_and_the_admins_bounds():
    admin = settings(sessions={"continuation": {"max_gb": 0.5, "dump_seconds": 30, "keep_hours": 2}})
    assert build_session_spec(admin, 0, "sxm2", "4711").continuation == ContinuationSpec(
        enabled=True, max_bytes=500_000_000, dump_seconds=30, keep_hours=2.0, continue_from="4711"
    )
    off = settings(sessions={"continuation": {"enabled": False}})
    assert build_session_spec(off, 0, "sxm2").continuation.enabled is False


def test_apps_offered_per_partition():
    admin = settings(apps={"offered": ["vscode", "mlflow"], "by_partition": {"sxm2": ["streamlit"]}})
    assert build_session_spec(admin, 0, "sxm2").apps.offered == ("streamlit",)
    assert build_session_spec(admin, 0, "other").apps.offered == ("vscode", "mlflow")


def test_without_per_user_origins_a_session_offers_no_app():
    admin = settings(hub={"subdomain_host": ""})
    assert build_session_spec(admin, 0, "sxm2").apps == AppsSpec(offered=(), max_running=4, start_seconds=90)


def test_no_extension_and_no_idle_timeout():
    spec = build_session_spec(settings(slurm={"allow_extend": False}), 0, "sxm2")
    assert (spec.clock.extend_hours, spec.idle) == (0.0, IdleSpec(timeout=0, warning=0))
    assert build_session_spec(settings(), 1000, "sxm2").idle == IdleSpec(timeout=1000, warning=500)  # half the timeout


@pytest.mark.parametrize("extend, idle_timeout", [(True, 7200), (False, 0), (True, 1000)])
def test_a_job_started_by_todays_hub_reads_as_the_same_spec(extend, idle_timeout):
    admin = settings(slurm={"allow_extend": extend})
    built = build_session_spec(admin, idle_timeout, "sxm2")
    # a job of that hub's never continues: its spec reads as today's with continuation off
    assert SessionSpec.from_json(todays_hub_spec(admin, idle_timeout)) == dataclasses.replace(
        built, continuation=ContinuationSpec()
    )
    # and the other way: what the hub writes now is what today's hub wrote, and continuation
    written = json.loads(built.to_json())
    assert written.pop("continuation") == dataclasses.asdict(built.continuation)
    assert written == json.loads(todays_hub_spec(admin, idle_timeout))


def test_the_json_round_trip():
    spec = build_session_spec(settings(), 7200, "sxm2")
    assert SessionSpec.from_json(spec.to_json()) == spec
    assert SessionSpec.from_json(SessionSpec().to_json()) == SessionSpec()


def test_missing_keys_take_the_declared_defaults():
    assert SessionSpec.from_environ({}) == SessionSpec.from_json("{}") == SessionSpec()
    assert SessionSpec() == SessionSpec(
        storage={},
        kernels={},
        tensorboard=TensorBoardSpec(max_instances=3),
        clock=ClockSpec(squeue="squeue", warn_minutes=(15, 5), save_minutes=3, extend_hours=0.0),
        idle=IdleSpec(timeout=0, warning=600),
        jupyterlab_news=False,
        guest_check_seconds=3,
    )
    partial = SessionSpec.from_environ({"DSPORTAL_SESSION": '{"clock": {"save_minutes": 5}, "idle": {"timeout": 60}}'})
    assert partial == SessionSpec(clock=ClockSpec(save_minutes=5), idle=IdleSpec(timeout=60))


@pytest.mark.parametrize(
    "text, message",
    [
        ('{"colour": "blue"}', "DSPORTAL_SESSION: unknown key colour (the hub and this node may run different"),
        ('{"clock": {"warn": [5]}}', "DSPORTAL_SESSION: unknown key clock.warn ("),
        (
            '{"clock": {"warn_minutes": [15, "5"]}}',
            'DSPORTAL_SESSION: clock.warn_minutes[1] must be an integer, not "5"',
        ),
        ('{"clock": {"warn_minutes": 15}}', "DSPORTAL_SESSION: clock.warn_minutes must be a list, not 15"),
        ('{"clock": {"extend_hours": "1"}}', 'DSPORTAL_SESSION: clock.extend_hours must be a number, not "1"'),
        ('{"idle": {"timeout": true}}', "DSPORTAL_SESSION: idle.timeout must be an integer, not true"),
        ('{"idle": 600}', "DSPORTAL_SESSION: idle must be a JSON object, not 600"),
        ('{"storage": {"isilon": 3}}', "DSPORTAL_SESSION: storage.isilon must be a string, not 3"),
        ('{"kernels": []}', "DSPORTAL_SESSION: kernels must be a JSON object, not []"),
        ('{"tensorboard": {"max_instances": 2.5}}', "DSPORTAL_SESSION: tensorboard.max_instances must be an integer"),
        ('{"jupyterlab_news": "yes"}', 'DSPORTAL_SESSION: jupyterlab_news must be true or false, not "yes"'),
        ("[]", "DSPORTAL_SESSION: the spec must be a JSON object, not []"),
        ("{storage", "DSPORTAL_SESSION is not JSON ("),
    ],
)
def test_unknown_keys_and_wrong_types_are_refused_naming_the_key(text, message):
    with pytest.raises(ValueError) as info:
        SessionSpec.from_json(text)
    assert str(info.value).startswith(message)


def test_a_spec_the_node_cannot_read_stops_the_start_with_one_line_in_the_session_log(capsys):
    with pytest.raises(SystemExit) as info:
        read_spec({"DSPORTAL_SESSION": '{"clock": {"save_minutes": "3"}}'})
    assert info.value.code == 1
    assert capsys.readouterr().out == (
        'dsportal: DSPORTAL_SESSION: clock.save_minutes must be an integer, not "3"; the session cannot start. '
        "Tell the cluster admins (DS Portal on the hub and on this node must be the same version).\n"
    )
