"""Idle sessions and usage: the cullers' configuration, what counts as use, the GPU readings (recorded NVML)."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

import pytest
from tornado.httpclient import HTTPClientError, HTTPRequest, HTTPResponse

from portal.config import ConfigError, parse_config
from spawner.hub.session.culler import PortalIdleCuller
from spawner.hub.session.handlers import stop_beside_start_check
from spawner.hub.session.idle import culler_services, group_for, idle_words, session_partition, timeout_for
from spawner.job.session.start import usage_limits
from spawner.jupyter.session.activity import GpuWatch, SessionActivity, busy_kernels, last_use
from spawner.jupyter.session.gpus import GpuReading, NoGpuReadings, read_gpus, visible

LDAP = {"bind_dn_template": "uid={username},dc=x"}
T0 = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


def sessions(**values):
    return parse_config(
        {
            "ldap": LDAP,
            "slurm": {"partitions": [{"name": "sxm2", "max_gpus": 4}, {"name": "debug", "max_gpus": 4}]},
            "sessions": values,
        }
    ).sessions


def test_each_session_gets_its_timeout_from_its_partition_and_its_users_groups():
    s = sessions(idle_timeout=7200, idle_timeout_by_partition={"debug": 600}, idle_exempt_groups=["hpcadmin"])
    assert timeout_for("sxm2", ["datasci"], s) == 7200
    assert timeout_for("debug", ["datasci"], s) == 600
    assert timeout_for("debug", ["datasci", "hpcadmin"], s) == 0  # exempt
    assert (group_for(600), group_for(0)) == ("dsportal-idle-600", None)
    assert timeout_for("sxm2", [], sessions(idle_timeout=0)) == 0


def test_one_culler_per_timeout_each_reaching_only_its_group():
    services, roles = culler_services(
        sessions(idle_timeout=7200, idle_timeout_by_partition={"debug": 600}, cull_every=60),
        "/venv/bin/python",
        ["sxm2", "debug", "pcie"],
        "sxm2",
    )
    assert services == [
        {
            "name": "dsportal-idle-culler-600",
            "command": [
                "/venv/bin/python",
                "-m",
                "spawner.hub.base.childguard",
                "/venv/bin/python",
                "-m",
                "spawner.hub.session.culler",
                "--timeout=600",
                "--cull-every=60",
                "--partitions=debug",
                "--default-partition=sxm2",
            ],
        },
        {
            "name": "dsportal-idle-culler-7200",
            "command": [
                "/venv/bin/python",
                "-m",
                "spawner.hub.base.childguard",
                "/venv/bin/python",
                "-m",
                "spawner.hub.session.culler",
                "--timeout=7200",
                "--cull-every=60",
                "--partitions=sxm2",
                "--partitions=pcie",
                "--default-partition=sxm2",
            ],
        },
    ]
    assert roles[0] == {
        "name": "dsportal-idle-culler-600",
        "description": "Stops servers of dsportal-idle-600 idle for 600 s",
        "services": ["dsportal-idle-culler-600"],
        "scopes": [
            "list:users!group=dsportal-idle-600",
            "read:users:activity!group=dsportal-idle-600",
            "read:servers!group=dsportal-idle-600",
            "delete:servers!group=dsportal-idle-600",
        ],
    }
    assert culler_services(sessions(idle_timeout=0), "python", ["sxm2"], "sxm2") == ([], [])


@pytest.mark.parametrize(
    ("user_options", "partition"),
    [
        ({"partition": "debug", "gpus": 1}, "debug"),
        ({"partition": ["debug"]}, "debug"),  # a form's field, as a list of one
        ({"gpus": 1}, "sxm2"),  # none named: the default
        ({}, "sxm2"),
        (None, "sxm2"),
        ({"partition": ["debug", "sxm2"]}, "sxm2"),  # not a session's (its start refused it): the default's culler
        ({"partition": 3}, "sxm2"),
    ],
)
def test_a_sessions_partition_as_the_culler_reads_it(user_options, partition):
    assert session_partition(user_options, "sxm2") == partition


def test_each_culler_passes_over_the_sessions_of_another_timeout():
    """A user with a 60-s debug session and a 2-hour sxm2 session is in both cullers' groups: the 60-s culler sees
    the sxm2 session idle for 10 minutes and leaves it to its own (before, it asked the hub to stop it, and the hub
    refused it with a 403 and a traceback in the log at every pass)."""
    short = PortalIdleCuller()
    short.parse_command_line(["--timeout=60", "--partitions=debug", "--default-partition=sxm2"])
    long = PortalIdleCuller()
    long.parse_command_line(["--timeout=7200", "--partitions=sxm2", "--partitions=pcie", "--default-partition=sxm2"])
    ten_minutes, three_hours = timedelta(minutes=10), timedelta(hours=3)

    def culls(culler, options, inactive):
        server = {"name": "", "user_options": options}
        return culler.cull_arbiter_hook(inactive=inactive, inactive_limit=culler.timeout, server=server)

    assert culls(short, {"partition": "debug"}, ten_minutes)
    assert not culls(short, {"partition": "debug"}, timedelta(seconds=30))
    assert not culls(short, {"partition": "sxm2"}, ten_minutes)
    assert not culls(short, {}, three_hours)  # the default partition's: the long culler's
    assert not culls(long, {"partition": "debug"}, three_hours)
    assert not culls(long, {"partition": "pcie"}, ten_minutes)
    assert culls(long, {"partition": "pcie"}, three_hours) and culls(long, {}, three_hours)


class Kept(logging.Handler):
    def __init__(self):
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record):
        self.records.append(record)


def test_a_stop_the_hub_answers_409_is_one_warning_line_and_other_failures_stay_errors():
    """The hub answers 409 to a stop beside a start request's check of the same session (the soak met it): the
    library logged an error with a traceback at every such pass."""
    culler = PortalIdleCuller()
    culler.initialize([])
    kept = Kept()
    culler.log.addHandler(kept)  # the application's logger does not propagate
    words = stop_beside_start_check("")
    answer = HTTPResponse(HTTPRequest("http://hub/"), 409, buffer=io.BytesIO(json.dumps({"message": words}).encode()))
    for error in (HTTPClientError(409, response=answer), HTTPClientError(500)):
        try:
            raise error
        except HTTPClientError:
            culler.log.exception("Error processing alice")  # what the library logs
    busy, failed = kept.records
    assert (busy.levelname, busy.exc_info, busy.getMessage()) == (
        "WARNING",
        None,
        f"Error processing alice: the hub answered 409 ({words}); the next pass tries again",
    )
    assert (failed.levelname, failed.exc_info[1].code) == ("ERROR", 500)


@pytest.mark.parametrize(
    "values, message",
    [
        ({"idle_timeout": 90}, "sessions.idle_timeout: 90 (at least 120 s (twice sessions.activity_seconds"),
        ({"idle_timeout_by_partition": {"gpu": 900}}, 'sessions.idle_timeout_by_partition.gpu: "gpu" (must be one of'),
    ],
)
def test_check_config_refuses_timeouts_the_reports_cannot_serve(values, message):
    with pytest.raises(ConfigError) as e:
        sessions(**values)
    assert any(line.startswith("portal.yaml: " + message) for line in e.value.errors), e.value.errors


def test_use_is_kernels_terminals_and_the_user_not_an_open_tabs_polling():
    kernels = SimpleNamespace(last_kernel_activity=T0 + timedelta(minutes=1))
    settings = {
        "started": T0,
        "kernel_manager": kernels,
        "last_activity_times": {},
        "api_last_activity": T0 + timedelta(hours=3),  # JupyterLab polling all night
        "terminal_last_activity": T0 + timedelta(minutes=5),
    }
    assert last_use(settings) == T0 + timedelta(minutes=5)
    settings["dsportal_last_activity"] = T0 + timedelta(minutes=9)  # the user's mouse, a busy kernel, the GPUs
    assert last_use(settings) == T0 + timedelta(minutes=9)


def kernel_manager(*states):
    kernels = {str(i): SimpleNamespace(execution_state=s) for i, s in enumerate(states)}
    return SimpleNamespace(
        list_kernel_ids=lambda: list(kernels), get_kernel=kernels.__getitem__, last_kernel_activity=T0
    )


def test_a_busy_kernel_is_use_even_when_it_prints_nothing():
    assert busy_kernels(kernel_manager("idle", "busy", "starting")) == 1
    settings = {"started": T0, "kernel_manager": kernel_manager("busy"), "last_activity_times": {}}
    activity = SessionActivity(
        settings,
        GpuWatch(None, [], note="no GPU readings: this session has no GPU"),
        30,
        {"timeout": 600, "warning": 120},
    )
    settings["dsportal_last_activity"] = T0
    asyncio.run(activity.check())
    assert settings["dsportal_last_activity"] > T0
    assert activity.answer()["idle_timeout"] == 600 and activity.answer()["idle_seconds"] < 5


class RecordedNvml:
    """NVML's answers as recorded on a node with two V100s (the job has GPU 1 only)."""

    def __init__(self, gpus, fail_init=None):
        self.gpus = gpus
        self.fail_init = fail_init
        self.shut = False

    def nvmlInit(self):
        if self.fail_init:
            raise self.fail_init

    def nvmlShutdown(self):
        self.shut = True

    def nvmlDeviceGetCount(self):
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, i):
        return self.gpus[i]

    def nvmlDeviceGetUUID(self, gpu):
        return gpu["uuid"]

    def nvmlDeviceGetName(self, gpu):
        return b"Tesla V100-SXM2-32GB"

    def nvmlDeviceGetUtilizationRates(self, gpu):
        return SimpleNamespace(gpu=gpu["util"], memory=0)

    def nvmlDeviceGetMemoryInfo(self, gpu):
        return SimpleNamespace(used=gpu["used"], total=34359738368, free=34359738368 - gpu["used"])

    def nvmlDeviceGetComputeRunningProcesses(self, gpu):
        return [SimpleNamespace(pid=p, usedGpuMemory=1 << 30) for p in gpu["pids"]]


V100S = [
    {"uuid": "GPU-aaaa", "util": 97, "used": 30 << 30, "pids": [4242]},  # another user's job
    {"uuid": "GPU-bbbb", "util": 0, "used": 2 << 30, "pids": [777]},
]  # this job's: memory held, no compute now


def test_the_jobs_gpus_only_read_through_recorded_nvml_answers():
    nvml = RecordedNvml(V100S)
    assert read_gpus(nvml, ["1"]) == [GpuReading(1, "Tesla V100-SXM2-32GB", 0, 2048, 32768, 1)]
    assert read_gpus(nvml, ["GPU-aaaa"])[0].utilization == 97  # UUIDs as CUDA_VISIBLE_DEVICES may name them
    assert nvml.shut
    assert read_gpus(nvml, ["1"])[0].in_use  # holding memory is use: a model loaded for the next step
    idle = RecordedNvml([{"uuid": "GPU-cccc", "util": 0, "used": 300 << 20, "pids": []}])
    assert not read_gpus(idle, ["0"])[0].in_use
    assert (visible("0,1"), visible(None), visible(""), visible("NoDevFiles")) == (["0", "1"], None, [], [])


@pytest.mark.parametrize(
    "nvml, devices, words",
    [
        (
            RecordedNvml([], fail_init=OSError("libnvidia-ml.so.1: cannot open shared object file")),
            ["0"],
            "no GPU readings: no NVIDIA driver on this node (libnvidia-ml.so.1: cannot open shared object file)",
        ),
        (RecordedNvml(V100S), [], "no GPU readings: this session has no GPU"),
    ],
)
def test_a_node_without_gpus_says_no_gpu_readings(nvml, devices, words):
    with pytest.raises(NoGpuReadings, match="^" + words.replace("(", r"\(").replace(")", r"\)") + "$"):
        read_gpus(nvml, devices)
    watch = GpuWatch(nvml, devices)
    watch.read()
    assert watch.to_dict() == {"gpus": [], "note": words} and not watch.in_use()


def test_gpu_use_keeps_a_session_in_use():
    settings = {"started": T0, "kernel_manager": kernel_manager("idle"), "last_activity_times": {}}
    activity = SessionActivity(settings, GpuWatch(RecordedNvml(V100S), ["1"]), 30, {})
    settings["dsportal_last_activity"] = T0
    asyncio.run(activity.check())
    assert settings["dsportal_last_activity"] > T0


def test_the_usage_items_limits_are_the_jobs():
    assert usage_limits({"SLURM_MEM_PER_NODE": "49152", "SLURM_CPUS_PER_TASK": "8"}) == {
        "MEM_LIMIT": str(48 * 1024**3),
        "CPU_LIMIT": "8",
    }
    assert usage_limits({}) == {}


def test_the_hub_config_runs_the_cullers_and_ignores_proxied_polling(tmp_path):

    import yaml
    from traitlets.config import Config

    from spawner.hub.wiring.hubconfig import apply_portal_config

    path = tmp_path / "portal.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "ldap": LDAP,
                "hub": {"data_dir": str(tmp_path / "state")},
                "sessions": {"idle_timeout": 3600, "cull_every": 120},
            }
        )
    )
    c = Config()
    apply_portal_config(c, path)
    [service] = c.JupyterHub.services.get_value([])
    assert service == {
        "name": "dsportal-idle-culler-3600",
        "command": [
            sys.executable,
            "-m",
            "spawner.hub.base.childguard",
            sys.executable,
            "-m",
            "spawner.hub.session.culler",
            "--timeout=3600",
            "--cull-every=120",
            "--partitions=gpu",  # the default config's one partition
            "--default-partition=gpu",
        ],
    }
    assert [r["services"] for r in c.JupyterHub.load_roles.get_value([])] == [["dsportal-idle-culler-3600"]]
    assert c.JupyterHub.last_activity_interval == 0


def test_a_guarded_command_ends_when_its_parent_is_killed(tmp_path):
    """The cullers' guard: a hub killed with SIGKILL takes its services with it (parent-death signal)."""
    import signal
    import subprocess

    from tests.support.http import wait_until

    pidfile = tmp_path / "child.pid"
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import subprocess, sys, time\n"
                f"subprocess.Popen([sys.executable, '-m', 'spawner.hub.base.childguard', 'sh', '-c', 'echo $$ > {pidfile}; "
                "exec sleep 300'])\n"
                "time.sleep(300)\n"
            ),
        ],
        cwd=Path(__file__).resolve().parents[2],
    )
    try:
        child = int(wait_until(lambda: pidfile.exists() and pidfile.read_text().strip(), 20, "the guarded child"))
        assert Path(f"/proc/{child}").exists()
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait(10)
    wait_until(
        lambda: not Path(f"/proc/{child}").exists() or "Z" in Path(f"/proc/{child}/stat").read_text().split()[2],
        20,
        "the guarded child ending with its parent",
    )


def test_idle_words_say_seconds_under_a_minute_and_whole_minutes_above():
    now = datetime(2026, 11, 28, 14, 5)
    tail = " (no busy kernel, terminal, mouse or keys in JupyterLab, or GPU work): its GPUs went back to the cluster."
    assert idle_words(now - timedelta(seconds=41), now, now) == (
        "Your session was stopped at 14:05 because nothing used it for 41 s" + tail
    )
    assert idle_words(now - timedelta(seconds=150), now, now) == (
        "Your session was stopped at 14:05 because nothing used it for 2 min" + tail
    )
    assert idle_words(None, now, now) == "Your session was stopped at 14:05 because nothing used it" + tail


def test_on_a_gpu_shared_in_shards_only_the_jobs_own_processes_are_its_use(tmp_path):
    """Slurm's shards divide no GPU: a neighbour's work keeps it busy.  A share session counts as using its GPU
    only while a process of its own job (its Slurm job cgroup) is on it."""
    from spawner.jupyter.session.gpus import job_of_cgroup, this_jobs_process

    assert job_of_cgroup("0::/system.slice/slurmstepd.scope/job_42/step_batch/user/task_0\n") == "42"
    assert job_of_cgroup("4:devices:/slurm_node002/uid_1001/job_7/step_0\n") == "7"
    assert job_of_cgroup("0::/user.slice/user-1001.slice/session-3.scope\n") == ""
    proc = tmp_path / "proc"
    for pid, job in (("self", "42"), ("777", "42"), ("4242", "43")):
        (proc / pid).mkdir(parents=True)
        (proc / pid / "cgroup").write_text(f"0::/system.slice/slurmstepd.scope/job_{job}/step_batch/user/task_0\n")
    own = this_jobs_process(proc)
    assert (own(777), own(4242), own(9999)) == (True, False, False)
    busy_neighbour = RecordedNvml([{"uuid": "GPU-aaaa", "util": 97, "used": 30 << 30, "pids": [4242]}])
    assert read_gpus(busy_neighbour, ["0"])[0].in_use  # a whole GPU: its use is the job's
    shared = read_gpus(busy_neighbour, ["0"], own)[0]
    assert (shared.own_processes, shared.in_use) == (0, False)  # a share: the neighbour's work is not this job's
    mine = RecordedNvml([{"uuid": "GPU-aaaa", "util": 0, "used": 2 << 30, "pids": [4242, 777]}])
    assert read_gpus(mine, ["0"], own)[0].in_use


def test_a_failed_culling_pass_never_writes_the_cullers_token_into_the_hubs_log():
    import functools
    import logging
    import sys

    from spawner.hub.session.culler import NoTokenInCallbackErrors

    async def cull_idle(url, api_token, inactive_limit):
        raise ConnectionRefusedError(111, "Connection refused")

    callback = functools.partial(cull_idle, url="http://10.77.0.1:8081/hub/api", api_token="0123secret")
    for error in (ConnectionRefusedError(111, "Connection refused"), ValueError("bad answer")):
        try:
            raise error
        except Exception:
            record = logging.LogRecord(
                "tornado.application", logging.ERROR, "ioloop.py", 1, "Exception in callback %r", (callback,),
                sys.exc_info(),
            )  # fmt: skip
        assert "0123secret" in logging.Formatter().format(record)  # as tornado wrote it
        assert NoTokenInCallbackErrors().filter(record)
        written = logging.Formatter().format(record)
        assert "0123secret" not in written and "partial" not in written, written
        if isinstance(error, OSError):  # the hub stopping: one warning line, no traceback
            assert record.levelname == "WARNING" and "Traceback" not in written, written
            assert written == "The hub did not answer the culling pass ([Errno 111] Connection refused); the next " \
                "pass tries again"  # fmt: skip
        else:
            assert record.levelname == "ERROR" and written.startswith("The culling pass failed\nTraceback")
