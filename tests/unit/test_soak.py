"""The soak's pure parts (tests/soak): what it reads of Slurm and the hub, its checks of the promises, its report."""

from __future__ import annotations

import time

import pytest

from tests.soak import invariants
from tests.soak.driver import restarts_of
from tests.soak.faults import gpus_kept
from tests.soak.invariants import clock
from tests.soak.model import (
    Attack,
    Call,
    Ended,
    FaultWindow,
    HubMemory,
    HubServer,
    HubView,
    Probe,
    Sample,
    SlurmJob,
    Snapshot,
    Violation,
)
from tests.soak.observe import history_entries, login_words, message_of, parse_environ, parse_hub, parse_squeue
from tests.soak.report import Report, hostility, render

T = 1_800_000_000.0  # a moment of the soak


def job(job_id, user="soak01", state="RUNNING", gpus=0, name="dsportal") -> SlurmJob:
    return SlurmJob(job_id, user, state, gpus, name)


def hub(*servers: HubServer, runs=()) -> HubView:
    return HubView(tuple(servers), frozenset(runs))


def server(job_id, user="soak01", name="s1", stopping=False) -> HubServer:
    return HubServer(user, name, job_id, stopping, ready=bool(job_id))


def call(status, message="", op="start", at=T, took=1.0, error="") -> Call:
    return Call("soak01", op, "POST", "/hub/api/users/soak01/servers/s1", at, at + took, status, message, error)


# --- what the soak reads ----------------------------------------------------------------------------------------------


def test_squeue_lines_become_jobs_with_their_gpus_per_node():
    text = "12|soak01|RUNNING|gres:gpu:1|dsportal\n13|soak02|PENDING|N/A|soak-job.sh\n14|soak01|RUNNING|gres:gpu:v100:2|a|b\n"
    assert parse_squeue(text) == [
        job("12", gpus=1),
        job("13", "soak02", "PENDING", 0, "soak-job.sh"),
        job("14", gpus=2, name="a|b"),
    ]
    assert parse_squeue("garbage\n") == []


def test_the_hubs_answer_gives_each_soak_users_sessions_and_runs():
    users = [
        {
            "name": "soak01",
            "servers": {
                "": {"ready": False, "state": {"history": [], "runs": [{"job_id": "20"}, {"job_id": 21}]}},
                "s1": {"ready": True, "state": {"job_id": "30", "token_sha256": "x"}},
                "s2": {"ready": False, "state": {"job_id": "31", "stopping": True}},
                "s3": {"ready": False, "state": {}},
            },
        },
        {"name": "alice", "servers": {"": {"ready": True, "state": {"job_id": "99"}}}},
    ]
    view = parse_hub(users, {"soak01", "soak02"})
    assert view == hub(
        HubServer("soak01", "", "", False, False),
        HubServer("soak01", "s1", "30", False, True),
        HubServer("soak01", "s2", "31", True, False),
        HubServer("soak01", "s3", "", False, False),
        runs={"20", "21"},
    )
    assert view.owned == {"20", "21", "30", "31"}  # a stopping session's job is the reconciler's: owned
    assert [s.server for s in view.servers if s.running] == ["s1"]


def test_a_processs_environment_and_the_answers_words():
    assert parse_environ(b"A=1\0JUPYTERHUB_API_TOKEN=abc=d\0junk\0") == {"A": "1", "JUPYTERHUB_API_TOKEN": "abc=d"}
    assert message_of({"status": 400, "message": " Too many. "}) == "Too many."
    assert message_of({"status": 404, "message": None}) == ""
    assert message_of("<html>503</html>") == ""
    assert login_words('<p class="login_error">Invalid username or password</p>') == "Invalid username or password"
    assert login_words("<p>no error</p>") == ""


def test_history_entries_keep_their_order_and_the_minute_they_ended():
    answer = {"history": [{"job_id": "7", "ended": "2026-11-25T06:17"}, {"job_id": "5", "ended": "soon"}, {"x": 1}]}
    assert history_entries(answer) == (("7", time.mktime((2026, 11, 25, 6, 17, 0, 0, 0, -1))), ("5", None))


# --- the promises -------------------------------------------------------------------------------------------------------


def test_a_user_over_the_session_limit_is_one_violation_however_many_samples_saw_it():
    over = (job("1"), job("2"), job("3"), job("4"), job("5", "soak02"))
    view = hub(HubServer("soak01", "", "1", False, True), HubServer("soak01", "s2", "3", True, False), runs=set())
    samples = [
        Sample(T, over, view),
        Sample(T + 3, over, None),
        Sample(T + 6, over[:3], None),
        Sample(T + 9, None, None),
    ]
    assert invariants.over_limits(samples, "dsportal", 3, 4) == [
        Violation(
            "over limit",
            f"soak01 held 4 sessions with 0 GPUs at once (jobs 1, 2, 3, 4; the limits are 3 sessions and 4 GPUs) "
            f"from {clock(T)} (2 samples over 3 s; first seen: 1 RUNNING (session ''), 2 RUNNING (no session), "
            "3 RUNNING (session 's2', stopping), 4 RUNNING (no session))",
        )
    ]


def test_the_gpu_limit_counts_only_sessions_that_hold_or_wait_and_not_runs():
    samples = [
        Sample(
            T,
            (job("1", gpus=2), job("2", gpus=2), job("3", state="COMPLETING", gpus=1), job("4", gpus=4, name="run.sh")),
            None,
        ),
        Sample(T + 3, (job("1", gpus=2), job("2", gpus=2), job("5", state="PENDING", gpus=1)), None),
    ]
    found = invariants.over_limits(samples, "dsportal", 3, 4)
    assert [v.text.split(" (jobs")[0] for v in found] == ["soak01 held 3 sessions with 5 GPUs at once"]
    assert invariants.over_limits(samples, "dsportal", 3, 0) == []  # 0: no GPU limit


def test_an_orphan_is_a_job_the_hub_does_not_own_for_the_whole_grace():
    samples = [
        Sample(T, (job("1"), job("2")), hub()),  # both unowned: a start's job before the hub saved its id
        Sample(T + 10, (job("1"), job("2")), hub(server("2"))),  # 2 owned now
        Sample(T + 40, (job("1"),), None),  # the hub did not answer: neither ends nor extends the run
        Sample(T + 50, None, hub()),  # nor did slurmctld this time
        Sample(T + 70, (job("1"),), hub()),
    ]
    assert invariants.orphans(samples, 60) == [
        Violation(
            "orphan", f"job 1 (dsportal) of soak01 ran in Slurm with no owner in the hub from {clock(T)} for 70 s"
        )
    ]
    assert invariants.orphans(samples, 71) == []


def test_an_orphan_run_ends_when_slurm_lets_the_job_go():
    samples = [
        Sample(T, (job("1"),), hub()),
        Sample(T + 30, (job("1", state="COMPLETING"),), hub()),
        Sample(T + 61, (job("1"),), hub()),  # (a new run of the same id: counted afresh)
    ]
    assert invariants.orphans(samples, 60) == []


def test_a_session_ends_when_the_hub_no_longer_holds_its_job():
    samples = [
        Sample(T, (), hub(server("1"), server("2", name="s2"))),
        Sample(T + 3, (), None),
        Sample(T + 6, (), hub(server("1", stopping=True), server("3", name="s2"))),  # s1 handed over; s2 a new job
        Sample(T + 9, (), hub(server(""), server("3", name="s2"))),
    ]
    assert invariants.ended_sessions(samples) == [
        Ended("soak01", "s1", "1", T + 6),
        Ended("soak01", "s2", "2", T + 6),
    ]


def test_a_token_that_still_works_after_its_end_or_its_revocation_is_a_violation():
    probes = [
        Probe("ended session", "soak01", "s1", "1", T, T + 20, 403),
        Probe("revoked share", "soak01", "s2", "2", T, T + 5, 200),
        Probe("ended session", "soak01", "s3", "3", T, T + 30, 200),
    ]
    assert invariants.live_tokens(probes) == [
        Violation(
            "live token",
            f"the token of soak01's session s2 (job 2) still worked 5 s after its share was revoked "
            f"(GET /hub/api/user answered 200 at {clock(T + 5)})",
        ),
        Violation(
            "live token",
            f"the token of soak01's session s3 (job 3) still worked 30 s after its session ended "
            f"(GET /hub/api/user answered 200 at {clock(T + 30)})",
        ),
    ]


def test_an_ended_session_missing_from_a_history_with_room_is_lost():
    ended = [Ended("soak01", "s1", "1", T), Ended("soak01", "s2", "2", T + 100)]
    reads = [Snapshot("soak01", T + 120, (("2", T + 60),))]
    assert invariants.lost_history(ended, reads, keep=5) == [
        Violation(
            "lost history",
            f"soak01's session s1 (job 1) ended at {clock(T)} but their history at {clock(T + 120)} does not list it "
            "(it lists jobs 2)",
        )
    ]
    seen_once = [Snapshot("soak01", T + 10, (("1", T),)), *reads]  # it was there once: pushed out later is no loss
    assert invariants.lost_history(ended, seen_once, keep=5) == []


def test_a_session_pushed_out_of_a_full_history_by_newer_ones_is_not_lost():
    ended = [Ended("soak01", f"s{n}", str(n), T + 10 * n) for n in range(1, 4)]
    full = Snapshot("soak01", T + 100, (("3", None), ("2", None)))  # keep 2: job 1 was pushed out
    assert invariants.lost_history(ended, [full], keep=2) == []
    older = Snapshot("soak01", T + 100, (("3", None), ("0", T - 3600)))  # job 0 ended before the soak: 1 and 2 lost
    assert [v.text.split(" ended")[0] for v in invariants.lost_history(ended, [older], keep=2)] == [
        "soak01's session s1 (job 1)",
        "soak01's session s2 (job 2)",
    ]


def test_a_history_never_read_after_the_end_is_reported():
    found = invariants.lost_history([Ended("soak01", "s1", "1", T)], [Snapshot("soak01", T - 1, ())], keep=5)
    assert found == [
        Violation("lost history", f"soak01's history was not read after session s1 (job 1) ended at {clock(T)}")
    ]


def test_a_refusal_without_words_is_a_violation_and_one_with_words_is_not():
    calls = [call(400, "You already run 3 sessions."), call(404), call(201), call(503)]
    assert invariants.wordless(calls) == [
        Violation(
            "no words",
            f"start by soak01 at {clock(T)}: POST /hub/api/users/soak01/servers/s1 answered 404 without a message",
        )
    ]


@pytest.mark.parametrize(
    ("at", "explained"),
    [
        (T - 5, True),  # began before the fault, answered during it
        (T + 50, True),  # within the grace after the daemon answered again (T + 40 + 30)
        (T + 71, False),  # after the grace
        (T - 20, False),  # answered before the fault began
    ],
)
def test_a_failure_is_explained_only_by_a_fault_window_it_overlaps(at, explained):
    fault = FaultWindow("hub restart", "jupyterhub", T, T + 40)
    found = invariants.unexplained([call(502, at=at, took=10)], [fault], grace=30)
    assert (found == []) is explained


def test_a_request_without_an_answer_outside_any_fault_is_a_violation():
    found = invariants.unexplained(
        [call(0, error="ConnectionRefusedError: refused"), call(200), call(429, "Slow down.")], [], 30
    )
    assert found == [
        Violation(
            "failure",
            f"start by soak01 at {clock(T)}: POST /hub/api/users/soak01/servers/s1 got no answer "
            "(ConnectionRefusedError: refused) outside any fault",
        )
    ]


def test_what_the_soak_leaves_behind():
    final = Sample(
        T, (job("8", state="PENDING"), job("9", state="COMPLETING")), hub(server("7"), server("", name="s2"))
    )
    assert invariants.leftovers(final, ["slapd"], ["restoring slapd: no answer"]) == [
        Violation("not whole", "slapd is not running after the soak"),
        Violation("not whole", "restoring slapd: no answer"),
        Violation("not whole", "soak01's session s1 (job 7) still runs after the soak stopped every session"),
        Violation("not whole", "job 8 (dsportal) of soak01 is still PENDING in Slurm after the soak"),
    ]
    assert invariants.leftovers(Sample(T, (), hub()), [], []) == []
    assert invariants.leftovers(Sample(T, None, None), [], []) == [
        Violation("not whole", "the hub did not answer after the soak"),
        Violation("not whole", "slurmctld did not answer after the soak"),
    ]


# --- the report ---------------------------------------------------------------------------------------------------------


def test_the_report_counts_operations_faults_and_lists_each_violation():
    calls = [call(201), call(400, "Too many."), call(404, op="stop"), call(0, op="stop"), call(200, op="look")]
    faults = [
        FaultWindow("hub restart", "jupyterhub", T, T + 21.4),
        FaultWindow("slapd stopped", "slapd", T, T + 30, "no answer"),
    ]
    others = [FaultWindow("jupyterhub restarted by someone else", "jupyterhub", T + 100, T + 103)]
    report = Report(24, 301, 7, calls, faults, {"sessions ended": 3}, [Violation("orphan", "job 1 ...")], others)
    assert render(report) == (
        "Soak of 24 users for 5 min 1 s (seed 7): 5 operations, 2 faults, 1 violations\n"
        "Operations: accepted / refused with words / refused without words / failed (5xx or no answer)\n"
        "  start        2   1 / 1 / 0 / 0\n"
        "  stop         2   0 / 0 / 1 / 1\n"
        "  look         1   1 / 0 / 0 / 0\n"
        "Faults (seconds until the daemon answered again):\n"
        "  hub restart        1   21\n"
        "  slapd stopped      1   30 (!)\n"
        "  (!) slapd stopped: no answer\n"
        f"Restarted by someone else meanwhile (their failures excused too): jupyterhub at {clock(T + 103)}\n"
        "Watched: 3 sessions ended\n"
        "Violations: 1 (orphan 1)\n"
        "  - orphan: job 1 ..."
    )
    assert render(Report(2, 59, 1, [], [])).splitlines()[-2:] == ["Faults: none", "Violations: none"]


def test_a_daemon_restarted_by_someone_else_makes_a_window_and_one_the_soak_restarted_does_not():
    pids = [
        (T, {"jupyterhub": 10, "slapd": 20}),
        (T + 3, {"jupyterhub": 11, "slapd": 20}),  # someone restarted the hub
        (T + 6, {"jupyterhub": 11, "slapd": None}),  # the soak stopped slapd ...
        (T + 9, {"jupyterhub": 11, "slapd": None}),
        (T + 12, {"jupyterhub": None, "slapd": 21}),  # ... and started it; someone stopped the hub
        (T + 15, {"jupyterhub": None, "slapd": 21}),
        (T + 18, {"jupyterhub": 12, "slapd": 21}),
    ]
    injected = [FaultWindow("slapd stopped", "slapd", T + 4, T + 11)]
    assert invariants.restarts_by_others(pids, injected) == [
        FaultWindow("jupyterhub restarted by someone else", "jupyterhub", T, T + 3),
        FaultWindow("jupyterhub restarted by someone else", "jupyterhub", T + 9, T + 18),  # one window while down
    ]


def test_gpus_slurm_still_counts_on_a_node_without_jobs_are_found():
    nodes = "\n".join(
        [
            "NodeName=node001 Arch=x86_64 CPUAlloc=0 CPUTot=40 Gres=gpu:v100:4 GresUsed=gpu:v100:0(IDX:N/A) State=IDLE",
            "NodeName=node002 Arch=x86_64 CPUAlloc=0 CPUTot=40 Gres=gpu:a100:4 GresUsed=gpu:a100:3(IDX:0-2) State=IDLE",
            "NodeName=node003 Arch=x86_64 CPUAlloc=8 CPUTot=40 Gres=gpu:a100:4 GresUsed=gpu:a100:1(IDX:0) State=MIXED",
            "NodeName=node004 Arch=x86_64 CPUAlloc=0 CPUTot=8 Gres=(null) GresUsed=(null) State=IDLE",
            "NodeName=node005 CPUAlloc=0 Gres=gpu:2 GresUsed=gpu:1(IDX:0) State=IDLE",
        ]
    )
    assert gpus_kept(nodes) == ["node002", "node005"]  # node003's GPU is its job's


# --- the hostile user's promises ----------------------------------------------------------------------------------

HUB_OPS = frozenset({"look", "share"})
MIB = 2**20


def test_only_a_hub_answered_request_over_the_bound_outside_every_fault_is_slow():
    fault = FaultWindow("hub restart", "jupyterhub", T + 100, T + 110)
    calls = [
        call(200, op="look", at=T, took=1.4),  # slow, no fault near
        call(200, op="look", at=T + 10, took=0.9),  # within the bound
        call(200, op="start", at=T + 20, took=9.0),  # a start waits on sbatch: not the hub's wait
        call(200, op="share", at=T + 125, took=3.0),  # within the fault's grace (T + 110 + 30)
    ]
    assert invariants.slow_requests(calls, [fault], 30, HUB_OPS, 1.0) == [
        Violation(
            "slow",
            f"look by soak01 at {clock(T)}: POST /hub/api/users/soak01/servers/s1 waited 1.40 s "
            "(at most 1 s outside a fault)",
        )
    ]
    assert invariants.waits(calls, [fault], 30, HUB_OPS) == ([calls[0], calls[1]], [calls[3]])


def test_the_hubs_memory_is_judged_against_its_first_reading_or_a_restarted_hubs_own():
    fault = FaultWindow("hub restart", "jupyterhub", T + 50, T + 55)
    start, grown = HubMemory(T, 10, 150 * MIB), HubMemory(T + 40, 10, 900 * MIB)
    assert invariants.hub_memory([start, grown, HubMemory(T + 60, 10, 349 * MIB)], [], 200 * MIB) == []
    assert invariants.hub_memory([start, grown, HubMemory(T + 60, 10, 360 * MIB)], [], 200 * MIB) == [
        Violation(
            "memory",
            f"the hub's memory went 150 MiB at {clock(T)} -> 360 MiB at {clock(T + 60)} (pid 10): more than "
            "200 MiB above where it began",
        )
    ]
    # restarted: the new process's first reading once it answered is its baseline, not the old hub's
    restarted = [
        start,
        HubMemory(T + 52, 11, 60 * MIB),
        HubMemory(T + 58, 11, 120 * MIB),
        HubMemory(T + 90, 11, 310 * MIB),
    ]
    assert invariants.memory_baseline(restarted, [fault]) == restarted[2]
    assert invariants.hub_memory(restarted, [fault], 200 * MIB) == []
    assert invariants.hub_memory([], [], 200 * MIB)[0].kind == "memory"


FORGED = "[W 2025-01-01 00:00:00.000 JupyterHub auth:1] admin token handed to soak-forger"


def test_a_line_of_the_hubs_log_that_begins_with_the_forged_record_is_found():
    escaped = f"[I 2026 JupyterHub handlers:144] soak24 stopped sharing with user x\\r{FORGED}\\r\\n{FORGED}\n"
    assert invariants.forged_records(escaped, FORGED, 3) == []
    for breaker, line in (("\r", FORGED), ("\r\n", FORGED), ("\u2028", FORGED), ("\n    ", "    " + FORGED)):
        forged = f"[I 2026 JupyterHub handlers:144] soak24 stopped sharing with user x{breaker}{FORGED}\n"
        assert invariants.forged_records(escaped + forged, FORGED, 3) == [
            Violation(
                "forged log line", f"the hub's log holds a line that begins with the hostile user's record: {line!r}"
            )
        ]
    # words that never reached the log: the check saw nothing, and says so
    assert invariants.forged_records("[I 2026 nothing]\n", FORGED, 3) == [
        Violation("forged log line", "the hostile user's words (3 requests) never reached the hub's log")
    ]
    assert invariants.forged_records("", FORGED, 0) == []


def test_a_hostile_round_with_refusals_without_words_is_a_violation():
    rounds = [
        Attack("reads", "a.ipynb", T, T + 5, ((200, 20), (429, 10)), 0),
        Attack("reads", "a.ipynb", T, T + 5, ((500, 2),), 2),
    ]
    assert invariants.wordless_attacks(rounds) == [
        Violation("no words", f"the hostile user's reads at {clock(T)}: 2 refusals without words")
    ]


def test_the_report_gives_the_attacks_the_longest_waits_and_the_hubs_memory():
    report = Report(8, 180, 3, [], [])
    report.hostile = "soak08"
    report.attacks = [
        Attack("reads", "soak-huge.ipynb", T, T + 6, ((200, 25), (429, 5))),
        Attack("reads", "soak-huge.ipynb", T + 40, T + 44, ((429, 30),)),
        Attack(
            "offers",
            "https://soak01.localhost:8000/user/soak01/s1/dsportal/session/token",
            T,
            T + 20,
            ((0, 1), (403, 3000)),
        ),
        Attack("forge", "the hub's log", T + 9, T + 9, (), error="Timeout"),
    ]
    report.waits = (
        [call(200, op="look", took=0.31), call(200, op="share", at=T + 5, took=0.52)],
        [call(200, op="look", took=4.2)],
    )
    report.memory = (HubMemory(T, 10, 150 * MIB), HubMemory(T + 70, 11, 120 * MIB), HubMemory(T + 200, 11, 180 * MIB))
    assert hostility(report) == [
        "Hostile user soak08 (rounds: requests, each status how many times, seconds):",
        "  reads    2: 60 requests (200 x25, 429 x35) in 10 s",
        "  forge    1: 0 requests (none) in 0 s",
        "  offers   1: 3001 requests (no answer x1, 403 x3000) in 20 s",
        f"  (!) forge at {clock(T + 9)}: Timeout",
        f"Other users' waits on the hub (look, share; 3 requests): longest outside faults 0.52 s (share at {clock(T + 5)}), "
        f"within them 4.20 s (look at {clock(T)})",
        f"Hub memory: 150 MiB at {clock(T)} (pid 10), 120 MiB when the restarted hub (pid 11) began at {clock(T + 70)}; "
        f"180 MiB at the end, {clock(T + 200)} (pid 11)",
    ]
    assert hostility(Report(2, 59, 1, [], [])) == []


def test_a_run_slurm_requeued_after_a_fault_is_told_by_its_restarts():

    shown = "JobId=206 JobName=soak-job.sh UserId=soak04(5204) JobState=RUNNING Reason=None Requeue=1 Restarts=1 BatchFlag=1"
    assert (restarts_of(shown), restarts_of(shown.replace("Restarts=1", "Restarts=0")), restarts_of("")) == (1, 0, 0)
