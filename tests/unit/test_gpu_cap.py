"""sessions.max_gpus_per_user across a user's sessions, runs and sweeps: what counts and the refusal's words
(spawner/hub/runs/limits.py, spawner/hub/request/sessionlimits.py)."""

import asyncio
from types import SimpleNamespace

import pytest

from spawner.hub.request.gpuclaims import GpuClaims
from spawner.hub.request.sessionlimits import Held, gpu_problem, room_problem
from spawner.hub.runs.limits import OverGpuCap, runs_held, sweep_gpus, task_gpus, within_gpu_cap
from spawner.hub.session.userrecord import UserRecord
from spawner.hub.slurm import joblisting
from spawner.hub.slurm.clusterinfo import SharedAnswers
from spawner.slurmvocab import AccountedJob, ListedJob

NOW = 1_000_000.0
OLD = NOW - 3600  # submitted long before the listing: in every listing made since
NEW = NOW - 2  # submitted since the listing was taken, perhaps


def listed(job_id: str, state: str) -> ListedJob:
    return ListedJob(job_id, "alice", state, "sxm2", 1, "", "0:10", "", "1:00:00", "", "", "")


def accounted(job_id: str, state: str) -> AccountedJob:
    return AccountedJob(job_id, "alice", "sxm2", state, "0:0", "", "x", "", "0:40", 1, "node001", "1:00:00")


def a_run(job_id: str, gpus: int, nodes: int = 1, submitted: float = OLD) -> dict:
    return {"job_id": job_id, "settings": {"path": "t.ipynb", "nodes": nodes, "gpus": gpus}, "submitted_ts": submitted}


def a_sweep(job_id: str, gpus: int, tasks: int, at_once: int, submitted: float = OLD) -> dict:
    run = a_run(job_id, gpus, submitted=submitted)
    run["settings"]["sweep"] = {"grid": {}, "at_once": at_once}
    run["sweep"] = {"tasks": tasks, "at_once": at_once}
    return run


def test_a_run_holds_its_nodes_times_gpus_and_a_sweep_its_tasks_at_once():
    assert (task_gpus({"nodes": 2, "gpus": 3}), task_gpus({"gpus": 1}), task_gpus({"nodes": 4, "gpus": 0})) == (6, 1, 0)
    assert (sweep_gpus(2, tasks=10, at_once=4), sweep_gpus(2, tasks=3, at_once=4), sweep_gpus(1, 5, 0)) == (8, 6, 5)


def test_runs_in_the_queue_count_and_ended_ones_do_not():
    runs = [a_run("10", 2, nodes=2), a_run("11", 1), a_run("12", 3), a_run("13", 0)]
    queue = [listed("10", "RUNNING"), listed("11", "PENDING"), listed("12", "COMPLETED"), listed("13", "RUNNING")]
    assert runs_held(runs, queue, [], 3, NOW) == [Held("10", 4, kind="run"), Held("11", 1, kind="run")]


def test_a_run_no_listing_shows_yet_counts_until_its_listing_settles_or_accounting_says_it_ended():
    runs = [a_run("20", 1, submitted=NEW), a_run("21", 2, submitted=NEW), a_run("22", 4)]
    assert runs_held(runs, [], [accounted("21", "FAILED")], 3, NOW) == [Held("20", 1, kind="run")]


def test_a_sweep_counts_the_tasks_it_may_still_run_at_once():
    runs = [a_sweep("30", 1, tasks=6, at_once=4), a_sweep("31", 2, tasks=5, at_once=2), a_sweep("32", 1, 3, 3)]
    queue = [
        listed("30_4", "RUNNING"),  # 30: tasks 0-3 ended, 4 runs, 5 waits: 2 tasks left
        listed("30_5", "PENDING"),
        listed("31_[0-4%2]", "PENDING"),  # 31: none started: 2 at once
    ]
    done = [accounted(f"30_{t}", "COMPLETED") for t in range(4)] + [accounted(f"32_{t}", "COMPLETED") for t in range(3)]
    assert runs_held(runs, queue, done, 3, NOW) == [Held("30", 2, kind="sweep"), Held("31", 4, kind="sweep")]


def test_a_sweep_just_submitted_counts_in_full():
    assert runs_held([a_sweep("40", 2, tasks=8, at_once=3, submitted=NEW)], [], [], 3, NOW) == [
        Held("40", 6, kind="sweep")
    ]


def test_the_refusal_says_what_counts_and_what_is_left():
    held = [Held("", 2), Held("train", 0), Held("812", 1, kind="run")]
    assert gpu_problem(held, 2, 4, "this run") == (
        "You hold 3 GPUs in 1 session and 1 run (your unnamed session: 2, run 812: 1), and "
        "sessions.max_gpus_per_user is 4 here: it counts the GPUs of your sessions, runs and sweeps together (a "
        "sweep's: those of the tasks it may run at once). This run asks for 2, so it may ask for at most 1. Ask for "
        "fewer GPUs, or stop a session or cancel a run or sweep first."
    )
    assert gpu_problem(held, 1, 4, "this run") == ""
    assert gpu_problem(held + [Held("9", 9, kind="sweep")], 0, 4, "this run") == ""  # no GPU asked: never refused


def test_a_sweep_refusal_says_how_its_gpus_are_counted():
    held = [Held("a", 1), Held("b", 1), Held("70", 1, kind="run"), Held("71", 2, kind="sweep")]
    assert gpu_problem(held, 4, 6, "this sweep", " (2 GPUs × 2 runs at once)") == (
        "You hold 5 GPUs in 2 sessions, 1 run and 1 sweep (session 'a': 1, session 'b': 1, run 70: 1, sweep 71: 2), "
        "and sessions.max_gpus_per_user is 6 here: it counts the GPUs of your sessions, runs and sweeps together (a "
        "sweep's: those of the tasks it may run at once). This sweep asks for 4 (2 GPUs × 2 runs at once), so it may "
        "ask for at most 1. Ask for fewer GPUs or fewer runs at once, or stop a session or cancel a run or sweep first."
    )
    assert gpu_problem([], 8, 4, "this sweep", " (1 GPU × 8 runs at once)").startswith(
        "You hold no GPU, and sessions.max_gpus_per_user is 4 here"
    )


def test_a_session_counts_runs_for_gpus_but_not_as_sessions():
    held = [Held("", 1), Held("50", 2, kind="run"), Held("51", 1, kind="sweep")]
    assert room_problem(held, gpus=0, max_per_user=2, max_gpus=4) == ""
    assert room_problem(held, gpus=1, max_per_user=2, max_gpus=4).startswith(
        "You hold 4 GPUs in 1 session, 1 run and 1 sweep (your unnamed session: 1, run 50: 2, sweep 51: 1)"
    )


def test_submissions_on_their_way_count_until_released():
    claims = GpuClaims()
    first, second = claims.claim("alice", 2), claims.claim("alice", 1)
    claims.claim("bob", 4)
    assert claims.of("alice") == [Held("being submitted", 2, kind="run"), Held("being submitted", 1, kind="run")]
    claims.release("alice", first)
    claims.release("alice", second)
    assert (claims.of("alice"), len(claims.of("bob"))) == ([], 1)


class StaleThenFreshListing:
    """The shared listing as the hub had it when CI's run was refused: squeue's older answer still shows the
    user's 4-GPU run that has just ended; a fresh one does not."""

    def __init__(self):
        self.asked: list = []

    async def of_user(self, username: str, fresh: bool = False):
        self.asked.append(fresh)
        return ([] if fresh else [listed("69", "RUNNING")]), [accounted("69", "CANCELLED")], []


def a_hub_with(listing, runs: list[dict]):
    settings = SimpleNamespace(
        sessions=SimpleNamespace(max_gpus_per_user=4),
        runs=SimpleNamespace(list_seconds=3),
        slurm=SimpleNamespace(shards=SimpleNamespace(per_gpu=0)),
    )
    services = SimpleNamespace(settings=settings, listing=listing, gpu_claims=GpuClaims())
    orm_user = SimpleNamespace(id=1, name="alice", created="", orm_spawners={})
    user = SimpleNamespace(name="alice", spawners={}, orm_user=orm_user)
    records = {(1, ""): UserRecord(runs=runs)}  # the user's record (spawner/hub/session/userrecord.py)
    services.shared = lambda key, make: records if key == ("user records",) else make()
    return services, SimpleNamespace(user=user)


def test_a_run_refused_on_an_older_listing_is_judged_again_on_a_fresh_squeue():
    listing = StaleThenFreshListing()
    services, spawner = a_hub_with(listing, [a_run("69", 4)])
    request = SimpleNamespace(settings=lambda: {"path": "t.py", "nodes": 2, "gpus": 2})

    async def submit():
        return "70"

    assert asyncio.run(within_gpu_cap(services, spawner, request, None, submit)) == "70"
    assert listing.asked == [False, True]


def test_a_run_refused_on_a_fresh_squeue_too_is_refused_with_words():
    class Running(StaleThenFreshListing):
        async def of_user(self, username, fresh=False):
            self.asked.append(fresh)
            return [listed("69", "RUNNING")], [], []

    listing = Running()
    services, spawner = a_hub_with(listing, [a_run("69", 4)])
    request = SimpleNamespace(settings=lambda: {"path": "t.py", "gpus": 1})

    async def submit():
        raise AssertionError("submitted past the cap")

    with pytest.raises(OverGpuCap, match=r"You hold 4 GPUs in 1 run \(run 69: 4\)"):
        asyncio.run(within_gpu_cap(services, spawner, request, None, submit))
    assert listing.asked == [False, True]


def test_a_shared_answer_younger_than_the_callers_age_is_reused_and_an_older_one_asked_again():
    answers = SharedAnswers(max_age=30)
    asked = []

    async def ask():
        asked.append(1)
        return len(asked)

    async def calls():
        first = await answers.get("queue", ask)
        again = await answers.get("queue", ask, max_age=5)  # just asked: reused
        await asyncio.sleep(0.05)
        fresh = await answers.get("queue", ask, max_age=0.01)  # older than the caller wants: asked again
        cached = await answers.get("queue", ask)
        return first, again, fresh, cached

    assert asyncio.run(calls()) == (1, 1, 2, 2)


def test_a_fresh_listing_is_asked_anew_and_a_silent_slurm_keeps_the_older_answer(monkeypatch):

    monkeypatch.setattr(joblisting, "RECHECK_WAIT", 0.2)
    calls = []

    class Client:
        async def all_jobs(self):
            calls.append(1)
            if len(calls) == 3:  # Slurm silent: this squeue outlasts the wait
                await asyncio.sleep(5)
            return [listed(str(len(calls)), "RUNNING")]

        async def accounting(self, days):
            return []

    listing = joblisting.JobListing(Client(), SimpleNamespace(history_days=1, list_seconds=30, accounting_seconds=30))

    async def three():
        first = (await listing.of_user("alice"))[0]
        fresh = (await listing.of_user("alice", fresh=True))[0]  # asked anew, though 30 s have not passed
        started = asyncio.get_running_loop().time()
        silent = (await listing.of_user("alice", fresh=True))[0]
        return first, fresh, silent, asyncio.get_running_loop().time() - started

    first, fresh, silent, waited = asyncio.run(three())
    assert ([j.job_id for j in first], [j.job_id for j in fresh], [j.job_id for j in silent]) == (["1"], ["2"], ["2"])
    assert waited < 1


def test_a_users_listing_asks_squeue_and_sacct_at_once_and_waits_for_a_busy_slurm_once():
    """Under load both sources may be slow: one after the other, a page waited STALE_WAIT for each (the soak's
    1-s promise broke on that); at once, sacct is asked as squeue is, not after squeue's wait has run out."""
    asked: dict[str, float] = {}

    class Client:
        slow = False

        async def asked(self, source, answer):
            asked[source] = asyncio.get_running_loop().time()
            if self.slow:
                await asyncio.sleep(30)  # a busy Slurm: longer than any wait of the page's
            return answer

        async def all_jobs(self):
            return await self.asked("squeue", [listed("1", "RUNNING")])

        async def accounting(self, days):
            return await self.asked("sacct", [])

    client = Client()
    listing = joblisting.JobListing(client, SimpleNamespace(history_days=1, list_seconds=0, accounting_seconds=0))

    async def twice():
        await listing.of_user("alice")  # the first answers, at hand from now on
        client.slow = True
        return await listing.of_user("alice")  # both older than their period: asked again, Slurm busy

    queued, accounted, problems = asyncio.run(twice())
    assert ([j.job_id for j in queued], accounted, problems) == (["1"], [], [])  # the older answers, shown
    # asked in the same turn of the loop (one after the other: STALE_WAIT, 0.5 s, apart)
    assert abs(asked["sacct"] - asked["squeue"]) < joblisting.STALE_WAIT / 5


def test_a_users_jobs_wait_for_a_busy_slurm_once_for_the_listing_and_the_places_in_line_together():
    """The home page's refresh lists the user's jobs and each waiting one's place in its partition's line: waited
    one after the other (the listing's STALE_WAIT, then each line's ORDER_WAIT), a busy Slurm held it over 1 s
    (CI's soak: 1.24 s, over its 1-s promise); now one budget of STALE_WAIT covers them all, and the older answers
    are shown."""
    from spawner.hub.runs import service

    class Client:
        slow = False

        async def answer(self, value):
            if self.slow:
                await asyncio.sleep(30)  # a busy Slurm: longer than any wait of the page's
            return value

        async def all_jobs(self):
            return await self.answer([waiting("5", "gpu"), waiting("6", "cpu")])

        async def accounting(self, days):
            return await self.answer([])

    def waiting(job_id: str, partition: str) -> ListedJob:
        return ListedJob(job_id, "alice", "PENDING", partition, 1, "", "0:00", "", "1:00:00", "", "", "Priority")

    client = Client()
    orders = SharedAnswers(0)

    async def queue_order(partition: str, wait: float = 0.5) -> list[str]:  # the services' ORDER_WAIT
        return await orders.get(partition, lambda: client.answer(["4", "5", "6"]), wait=wait)

    runs = SimpleNamespace(history_days=1, list_seconds=0, accounting_seconds=0)
    services = SimpleNamespace(listing=joblisting.JobListing(client, runs), queue_order=queue_order, settings=None)
    offered = [SimpleNamespace(name="gpu"), SimpleNamespace(name="cpu")]
    services.settings = SimpleNamespace(runs=runs, slurm=SimpleNamespace(partitions=offered))
    services.shared = lambda key, make: services.__dict__.setdefault(key, make())
    user = SimpleNamespace(name="alice", orm_user=SimpleNamespace(id=1, created="", orm_spawners={}), spawners={})

    async def checked(account) -> None:
        return None

    spawner = SimpleNamespace(
        user=user,
        services=services,
        unix_account=lambda: SimpleNamespace(name="alice", home="/home/alice"),
        check_directory_account=checked,
    )
    services.shared(("user records",), dict)[(1, "")] = UserRecord()  # none of the portal's runs

    async def twice():
        await service.jobs(services, spawner)  # the first answers, at hand from now on
        client.slow = True
        started = asyncio.get_running_loop().time()
        page = await service.jobs(services, spawner)  # every answer older than its period: asked again, Slurm busy
        return page, asyncio.get_running_loop().time() - started

    page, waited = asyncio.run(twice())
    words = {row["job_id"]: row["words"] for row in page["jobs"]}  # the older answers, shown
    assert "3rd in line" in words["6"] and "2nd in line" in words["5"], words
    assert waited < joblisting.STALE_WAIT * 1.5, waited  # one wait, not the listing's and then each line's
