"""What is free, before a start: the shared sinfo, the start estimate and the REST API (mock Slurm)."""

from __future__ import annotations

import asyncio

import pytest
import yaml

from spawner.hub.slurm.services import HubServices
from tests.support.mockslurm import TEST_ONLY_START


@pytest.fixture
def services(a_config_file, mock_slurm):
    return HubServices(str(a_config_file))


async def test_partitions_say_what_is_free_from_one_shared_sinfo(services, mock_slurm):
    answers = await asyncio.gather(*(services.cluster.nodes() for _ in range(20)))  # 20 users at once
    assert len(mock_slurm.calls("sinfo")) == 1
    partitions = services.partitions(answers[0])
    assert [(p["partition"], p["summary"]) for p in partitions] == [
        ("sxm2", "sxm2: 5 of 8 GPUs free, largest free block 4 on one node"),
        ("pcie", "pcie: 2 of 2 GPUs free, largest free block 2 on one node"),
    ]
    assert partitions[0]["starts_now"] == {"0": True, "1": True, "2": True, "3": True, "4": True}
    await services.cluster.nodes()  # within cluster_info_seconds: the same answer
    assert len(mock_slurm.calls("sinfo")) == 1


async def test_a_shape_that_fits_starts_now_without_asking_slurm_more(services, mock_slurm):
    answer = await services.estimate("alice", {"partition": "sxm2", "gpus": "4", "hours": "2"})
    assert answer == {
        "starts_now": True,
        "start": None,
        "message": "4 GPUs · 32 cores · 192 GB RAM · 2 h on sxm2: can start now.",
    }
    assert mock_slurm.calls("sbatch") == []


async def test_a_shape_that_does_not_fit_gets_slurms_estimate_once_per_shape(services, mock_slurm):
    mock_slurm.set_nodes([["gpu01", "sxm2", "alloc", 4, 4, 8, 40, 393216, 196608]])
    answers = await asyncio.gather(
        *(services.estimate("alice", {"partition": "sxm2", "gpus": "2"}) for _ in range(5))
    )  # five at the same moment share one sbatch
    assert answers[0] == {
        "starts_now": False,
        "start": TEST_ONLY_START,
        "message": (
            "2 GPUs · 16 cores · 96 GB RAM · 8 h on sxm2: not free now; Slurm expects it could start at "
            "2026-11-22 12:00:00."
        ),
    }
    assert all(a == answers[0] for a in answers)
    assert await services.estimate("bob", {"partition": "sxm2", "gpus": "2"}) == answers[0]  # per shape, not user
    [call] = mock_slurm.calls("sbatch")  # once for the shape, then cached
    assert "--test-only" in call["argv"] and "--gres=gpu:2" in call["argv"]
    assert [c["user"] for c in mock_slurm.calls("sudo")] == ["alice"]  # asked as the user, whose limits apply
    assert mock_slurm.jobs() == {}  # nothing queued


async def test_each_account_and_qos_gets_its_own_estimate(a_config_file, mock_slurm):
    # an account's limits and priority, or a QOS's, change when a job may start: one account's estimate is not
    # another's (it was: the cache key named only partition, GPUs, type and length)
    config = yaml.safe_load(a_config_file.read_text())
    config["slurm"]["qos_choices"] = {"short": "Short", "long": "Long"}
    a_config_file.write_text(yaml.safe_dump(config))
    services = HubServices(str(a_config_file))
    mock_slurm.set_nodes([["gpu01", "sxm2", "alloc", 4, 4, 8, 40, 393216, 196608]])
    for options in ({}, {"account": "vision"}, {"account": "nlp"}, {"account": "vision", "qos": "short"}):
        await services.estimate("alice", {"partition": "sxm2", "gpus": "2", **options})
    await services.estimate("bob", {"partition": "sxm2", "gpus": "2", "account": "vision"})  # cached: same shape
    calls = [c["argv"] for c in mock_slurm.calls("sbatch")]
    assert len(calls) == 4
    assert [[a for a in argv if a.startswith(("--account=", "--qos="))] for argv in calls] == [
        ["--account=ds"],  # the admin's slurm.account
        ["--account=vision"],
        ["--account=nlp"],
        ["--account=vision", "--qos=short"],
    ]


async def test_minute_by_minute_lengths_share_the_quarter_hours_estimate_and_a_flood_is_bounded(services, mock_slurm):
    # the attack: 700 estimates of lengths one minute apart cost 699 sbatch --test-only runs (and Slurm job ids)
    from spawner.hub.slurm.services import NEW_ESTIMATES_PER_MINUTE, TooManyEstimates

    mock_slurm.set_nodes([["gpu01", "sxm2", "alloc", 4, 4, 8, 40, 393216, 196608]])
    for minute in range(61, 76):  # 1 h 01 min .. 1 h 15 min: one quarter hour, one question
        await services.estimate("carol", {"partition": "sxm2", "gpus": "1", "hours": f"{minute / 60:.4f}"})
    [call] = mock_slurm.calls("sbatch")
    assert "--time=01:15:00" in call["argv"]
    refused = 0
    for minute in range(76, 76 + 15 * (NEW_ESTIMATES_PER_MINUTE + 5), 15):  # a new quarter hour each time
        try:
            await services.estimate("carol", {"partition": "sxm2", "gpus": "1", "hours": f"{minute / 60:.4f}"})
        except TooManyEstimates as e:
            assert "try again in a minute" in str(e)
            refused += 1
    assert len(mock_slurm.calls("sbatch")) == NEW_ESTIMATES_PER_MINUTE and refused == 6
    # other users are not held back by carol's flood, and cached shapes cost nobody anything
    await services.estimate("alice", {"partition": "sxm2", "gpus": "1", "hours": f"{76 / 60:.4f}"})
    await services.estimate("alice", {"partition": "sxm2", "gpus": "2", "hours": "8"})
    assert len(mock_slurm.calls("sbatch")) == NEW_ESTIMATES_PER_MINUTE + 1


async def test_refused_shapes_and_a_silent_slurm_are_clear(services, mock_slurm):
    with pytest.raises(ValueError, match="gpus: 9 is out of range; choose a whole number from 0 to 4"):
        await services.estimate("alice", {"partition": "sxm2", "gpus": "9"})
    mock_slurm.fail("sinfo", "unreachable")
    from spawner.hub.slurm.client import SlurmError

    with pytest.raises(SlurmError):
        await services.cluster.nodes()


def test_the_rest_api_answers_logged_in_users_only(a_hub_and_its_slurm):
    hub, mock = a_hub_and_its_slurm
    status, token = hub.api("POST", "/users/alice/tokens", {"note": "partitions"})
    assert status == 201, token
    status, answer = hub.api("GET", "/dsportal/partitions", token=token["token"])
    assert status == 200, answer
    assert [p["summary"] for p in answer["partitions"]][0] == "sxm2: 5 of 8 GPUs free, largest free block 4 on one node"
    status, answer = hub.api("GET", "/dsportal/estimate?partition=sxm2&gpus=1&hours=1", token=token["token"])
    assert (status, answer["starts_now"]) == (200, True)
    status, answer = hub.api("GET", "/dsportal/estimate?partition=nope", token=token["token"])
    assert status == 400 and "partition" in answer["message"]
    # the account and QOS reach the estimate (its own cache key, and refused before Slurm when the hub knows the
    # user's accounts: the form read them)
    assert hub.api("GET", "/dsportal/accounts", token=token["token"])[0] == 200
    status, answer = hub.api("GET", "/dsportal/estimate?partition=sxm2&gpus=1&account=nope", token=token["token"])
    assert status == 400 and "account" in answer["message"] and "nope" in answer["message"], answer
    status, _ = hub.api("GET", "/dsportal/partitions", token=None)
    assert status == 403


async def test_the_accounts_come_from_one_shared_set_of_calls_and_without_sshare_still_come(services, mock_slurm):
    answers = await asyncio.gather(*(services.accounts() for _ in range(20)))  # 20 forms open at once
    assert {c["what"] for c in mock_slurm.calls("sacctmgr")} == {"associations", "users", "qos"}
    assert len(mock_slurm.calls("sacctmgr")) == 3 and len(mock_slurm.calls("sshare")) == 1
    assert answers[0].to_dict("alice")["allocations"]["nlp"] == {
        "gpu_hours": 1000.0,
        "gpu_hours_left": 990.0,
        "fairshare": 0.5,
    }
    mock_slurm.fail("sshare", "error", "sshare: error: Problem talking to the database")
    fresh = await HubServices(services.path).accounts()  # a new hub: no shared answer yet
    assert fresh.of("alice") == ("vision", "nlp") and fresh.facts("alice").allowed["vision"] == ("normal", "short")
    assert fresh.to_dict("alice")["allocations"]["nlp"]["gpu_hours"] is None  # the allocations only are missing


async def test_the_alternatives_of_a_busy_shape_come_soonest_first(services, mock_slurm):
    from spawner.hub.slurm.alternatives import alternatives

    full = ["gpu01", "sxm2", "alloc", 4, 4, 8, 40, 393216, 196608]
    mock_slurm.set_nodes([full, ["gpu03", "pcie", "idle", 2, 0, 40, 40, 393216, 0]])  # sxm2 full, pcie free
    found = (await alternatives(services, "alice", {"partition": "sxm2", "gpus": "2", "hours": "8"}))["alternatives"]
    assert [(a["difference"], a["starts_now"], a["start"]) for a in found] == [
        ("on pcie", True, None),
        ("as asked", False, TEST_ONLY_START),
        ("4 h instead of 8", False, TEST_ONLY_START),
    ]
    with pytest.raises(ValueError, match="gpus: 9 is out of range"):
        await alternatives(services, "alice", {"partition": "sxm2", "gpus": "9"})


async def test_new_estimates_are_bounded_for_everyone_together(services, mock_slurm, monkeypatch):
    """Each user may make Slurm run 10 new estimates a minute; all users together ALL_NEW_ESTIMATES_PER_MINUTE
    (the alternatives ask up to 6 shapes at once: many users would add up on the scheduler)."""
    import spawner.hub.slurm.services as estimates

    monkeypatch.setattr(estimates, "ALL_NEW_ESTIMATES_PER_MINUTE", 15)
    mock_slurm.set_nodes([["gpu01", "sxm2", "alloc", 4, 4, 8, 40, 393216, 196608]])
    refused = []
    for user in ("alice", "bob"):
        for quarter in range(10):
            try:
                await services.estimate(user, {"partition": "sxm2", "gpus": "1", "hours": f"{1 + quarter / 4:g}"})
            except estimates.TooManyEstimates as e:
                refused.append((user, str(e)))
    assert len(mock_slurm.calls("sbatch")) == 10  # alice's ten shapes; bob's are the same ones: cached
    for quarter in range(10, 16):  # bob's own new shapes: five more, then everyone's bound
        try:
            await services.estimate("bob", {"partition": "sxm2", "gpus": "1", "hours": f"{1 + quarter / 4:g}"})
        except estimates.TooManyEstimates as e:
            refused.append(("bob", str(e)))
    assert len(mock_slurm.calls("sbatch")) == 15
    assert refused == [("bob", "The cluster is answering many start estimates; try again in a minute.")]
