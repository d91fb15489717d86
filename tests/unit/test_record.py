"""The session's saved record (spawner/hub/session/record.py): one versioned type, older records migrated."""

from __future__ import annotations

from spawner.hub.session.record import VERSION, SessionRecord

HISTORY = [
    {
        "job_id": "41",
        "summary": "1 GPU · 8 cores · 48 GB RAM · 8 h on sxm2",
        "options": {"gpus": "1"},
        "submitted": "2026-11-22T09:00",
        "ended": "2026-11-22T17:00",
        "why": "Stopped through the portal.",
    }
]

# What a hub before the typed record saved for a running session (no "version" key)
VERSION_0_RUNNING = {
    "job_id": "42",
    "job_status": "RUNNING||node001",
    "token_sha256": "ab" * 32,
    "start_done": True,
    "limit": "8 h",
    "minutes": 480,
    "submitted": "2026-11-22T10:00",
    "history": HISTORY,
}


def test_a_record_saved_before_versions_is_read_as_it_was_meant():
    assert SessionRecord.from_state(VERSION_0_RUNNING) == SessionRecord(
        job_id="42",
        job_status="RUNNING||node001",
        token_sha256="ab" * 32,
        start_done=True,
        stopping=False,
        limit="8 h",
        minutes=480,
        submitted="2026-11-22T10:00",
        last_end="",
        legacy_user={"history": HISTORY},  # the user's record's since 0.2.0: kept unread until it takes it
    )


def test_version_0_quirks_migrate():
    old = {"job_id": 42, "minutes": "480", "stopping": 1, "start_done": 0}
    assert SessionRecord.from_state(old) == SessionRecord(job_id="42", minutes=480, stopping=True)


def test_batchspawners_own_state_is_a_record_too():
    assert SessionRecord.from_state({"job_id": "7", "job_status": "PENDING|Resources|"}) == SessionRecord(
        job_id="7", job_status="PENDING|Resources|"
    )


def test_round_trip_carries_the_version():
    record = SessionRecord.from_state(VERSION_0_RUNNING)
    saved = record.to_state()
    assert saved == {"version": VERSION, **VERSION_0_RUNNING}
    assert SessionRecord.from_state(saved) == record


def test_a_stopping_job_and_an_ended_session_are_saved():
    record = SessionRecord(job_id="9", stopping=True, last_end="Your session reached its time limit (8 h) at 17:00.")
    saved = record.to_state()
    assert (saved["stopping"], saved["last_end"], saved["version"]) == (True, record.last_end, VERSION)
    assert SessionRecord.from_state(saved) == record


def test_nothing_to_remember_saves_nothing():
    assert SessionRecord().to_state() == {}
    assert SessionRecord.from_state({}) == SessionRecord() == SessionRecord.from_state(None)


def test_without_a_job_only_what_the_home_page_keeps_is_saved():
    record = SessionRecord(limit="8 h", minutes=480, last_end="ended", legacy_user={"history": HISTORY})
    assert record.to_state() == {"version": VERSION, "last_end": "ended", "history": HISTORY}


def test_a_field_that_does_not_read_is_left_at_its_default_and_the_job_kept():
    state = {"job_id": "42", "minutes": "lots", "limit": 8, "history": [HISTORY[0], "junk", 3], "start_done": True}
    # an older hub's history is the user's record's to read (and clean: tests/unit/test_userrecord.py)
    legacy = {"history": [HISTORY[0], "junk", 3]}
    assert SessionRecord.from_state(state) == SessionRecord(job_id="42", start_done=True, legacy_user=legacy)


def test_a_newer_hubs_record_is_read_as_far_as_this_hub_knows_it():
    newer = {"version": VERSION + 1, "job_id": "42", "start_done": True, "a_later_field": {"x": 1}}
    assert SessionRecord.from_state(newer) == SessionRecord(job_id="42", start_done=True)


def test_a_job_id_saved_as_a_number_is_kept_in_any_version():
    assert SessionRecord.from_state({"version": VERSION, "job_id": 42}).job_id == "42"


def test_a_version_that_is_no_number_is_read_as_the_oldest():
    assert SessionRecord.from_state({"version": ["x"], "job_id": "42", "minutes": "60"}) == SessionRecord(
        job_id="42", minutes=60
    )


def test_the_session_tokens_row_and_an_undelivered_token_are_saved_with_the_job():
    record = SessionRecord(job_id="9", token_sha256="cd" * 32, token_id=17, token_undelivered=True)
    saved = record.to_state()
    assert (saved["token_id"], saved["token_undelivered"]) == (17, True)
    assert SessionRecord.from_state(saved) == record
    assert "token_id" not in SessionRecord(job_id="9").to_state()  # a record of a hub that did not keep it
    held = SessionRecord(job_id="9", token_sha256="cd" * 32, token_undelivered=True, held_digests=["ab" * 32])
    assert SessionRecord.from_state(held.to_state()) == held  # the proof's key outlives a hub restart


# Every field, as the hub saved it before the code was grouped by concept (commit 594f470's SessionRecord.to_state):
# a database written then reads the same now (issue 41: the saved state is unchanged by the reorganisation).
SAVED_BEFORE_THE_CONCEPT_FOLDERS = {
    "version": 1,
    "job_id": "4711",
    "job_status": "RUNNING|None|node001",
    "token_sha256": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "start_done": True,
    "limit": "8 h",
    "minutes": 480,
    "submitted": "2026-11-24T09:12:03",
    "started": "2026-11-24T09:12:09",
    "stopping": True,
    "token_id": 42,
    "token_undelivered": True,
    "usage": {"cpu_seconds": 120.5, "max_rss_bytes": 1048576, "gpu_busy": [0.5]},
    "last_end": "Your session ended: its time was up (8 h).",
    "history": [{"job_id": "4700", "summary": "1 GPU, 8 cores, 48 GB, 8 h", "ended": "2026-11-23T18:00:00"}],
    "shares": [{"kind": "user", "name": "bob", "expires": "2026-11-24T17:12:00+00:00"}],
    "runs": [{"job_id": "4712", "path": "train.ipynb", "kind": "notebook", "submitted": "2026-11-24T09:30:00"}],
    "usage_log": [{"job_id": "4700", "ended": "2026-11-23T18:00:00", "gpu_hours": 8.0}],
    "notify_mail": True,
    "warned_job": "4711",
}


def test_a_record_saved_before_the_concept_folders_reads_the_same():
    record = SessionRecord.from_state(SAVED_BEFORE_THE_CONCEPT_FOLDERS)
    assert record.job_id == "4711" and record.token_id == 42 and record.shares[0]["name"] == "bob"
    assert record.to_state() == SAVED_BEFORE_THE_CONCEPT_FOLDERS
