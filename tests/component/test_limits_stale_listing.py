"""The limits count a stopping session's job that the hub's shared listing has not shown yet (mock Slurm).

The CI's soak saw soak04 hold 4 sessions with a limit of 3 for one sample after slurmctld came back: a start
whose first status listing failed (slurmctld stopped) and whose scancel failed was kept as "stopping", while the
latest listing that succeeded was older than its job.  Absent from that listing, the job read as gone: its session
no longer counted against the limits, and the fresh squeue of the next start skipped it as a job the hub tracks.
"""

from __future__ import annotations

import time

import pytest
import yaml
from jupyterhub import orm

from spawner.hub.request.refusal import SessionRefused
from tests.support.mockslurm import config_data, spawner_for


@pytest.fixture
def two_sessions(tmp_path, mock_slurm, a_home):
    """Alice's unnamed session ('first') and her session 'second' (one user object), at most 4 GPUs between them."""
    data = config_data(mock_slurm)
    data["sessions"] = {"max_per_user": 3, "max_gpus_per_user": 4}
    path = tmp_path / "portal.yaml"
    path.write_text(yaml.safe_dump(data))
    first = spawner_for("alice", path, a_home, startup_poll_interval=0.05, stop_timeout=1)
    second = spawner_for("alice", path, a_home, startup_poll_interval=0.05, stop_timeout=1)
    second.user = first.user
    db = orm.new_session_factory(f"sqlite:///{tmp_path / 'hub.sqlite'}")()
    user = orm.User(name="alice")
    db.add(user)
    for spawner, name in ((first, ""), (second, "second")):
        spawner.orm_spawner = orm.Spawner(user=user, name=name)
        db.add(spawner.orm_spawner)
    db.commit()
    first.user.spawners.update({"": first, "second": second})
    yield first, second
    db.close()


async def stopping_unlisted(first, mock_slurm) -> str:
    """'first' submitted its 4-GPU job after the latest listing, then was stopped while scancel failed."""
    await first.slurm_client.watcher.listing()  # the last listing that succeeds: before the job exists
    await first.apply_options_and_claim({"gpus": 4, "hours": 1})
    job_id = await first.submit_batch_script()
    mock_slurm.set_job(job_id, state="RUNNING", node="127.0.0.1")
    mock_slurm.fail("scancel", "unreachable")
    mock_slurm.fail("squeue", "unreachable")  # the watcher's listings fail from here: the old one stays the latest
    await first.stop()
    assert first.record.stopping and first.job_id == job_id
    mock_slurm.heal()  # Slurm answers again; the watcher has not listed since
    return job_id


async def test_a_stopping_job_the_latest_listing_predates_still_counts(two_sessions, mock_slurm):
    first, second = two_sessions
    await stopping_unlisted(first, mock_slurm)
    assert first.counts_against_limits()
    with pytest.raises(SessionRefused, match="sessions.max_gpus_per_user is 4 here"):
        second.apply_session_options({"gpus": 4, "hours": 1})
    assert not second.claimed


async def test_the_starts_own_squeue_counts_a_tracked_job_slurm_holds(two_sessions, mock_slurm):
    """However the hub's view of a session reads, a session job Slurm lists as pending or running counts."""
    first, second = two_sessions
    job_id = await stopping_unlisted(first, mock_slurm)
    await first.slurm_client.watcher.listing()  # a listing that holds the job as running ...
    first.slurm_client.watcher._listing[1].pop(job_id)  # ... but read as gone (a view the hub got wrong)
    assert not first.counts_against_limits()
    with pytest.raises(SessionRefused, match="sessions.max_gpus_per_user is 4 here"):
        await second.apply_options_and_claim({"gpus": 4, "hours": 1})
    assert not second.claimed and not second.start_tag


async def test_a_listing_begun_while_sbatch_ran_does_not_make_its_job_gone(two_sessions, mock_slurm):
    """The job exists once sbatch answers: a listing begun before then (another user's poll while slurmctld is
    slow) may lack it."""
    first, _ = two_sessions
    submit = first.slurm_client.submit_as
    answered = []

    async def timed_submit(*args, **kwargs):
        job_id = await submit(*args, **kwargs)
        answered.append(time.monotonic())
        return job_id

    first.slurm_client.submit_as = timed_submit
    try:
        await first.apply_options_and_claim({"gpus": 4, "hours": 1})
        await first.submit_batch_script()
    finally:
        first.slurm_client.submit_as = submit
    assert first.submit_began >= answered[0]


async def test_a_session_counts_the_gpus_slurm_holds_for_its_job_when_its_options_say_fewer(two_sessions, mock_slurm):
    """A session's options can say fewer GPUs than its job holds (edited while it stopped, or a restart asking for
    fewer while its old job lingers): the start's own squeue counts what Slurm holds."""
    first, second = two_sessions
    await first.apply_options_and_claim({"gpus": 0, "hours": 1})
    job_id = await first.submit_batch_script()
    job = mock_slurm.jobs()[job_id]
    mock_slurm.set_job(job_id, state="RUNNING", node="127.0.0.1", options={**job["options"], "gres": "gpu:4"})
    first.claimed = False  # its start is over: it counts as the running session it is
    assert [h.gpus for h in second.held_beside()] == [0]  # the hub's own view: 0 + 4 GPUs would fit
    with pytest.raises(SessionRefused, match="sessions.max_gpus_per_user is 4 here"):
        await second.apply_options_and_claim({"gpus": 4, "hours": 1})
