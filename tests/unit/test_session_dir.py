"""A session's private folder on the node: an ended session's is removed, a running one's is kept.

A user may run several sessions on one node; each start used to remove every folder of the user's earlier
sessions, the running ones' too (their kernel sockets and kernelspecs), and a session started beside another
lost its runtime folder and exited (seen in CI).
"""

from __future__ import annotations

from spawner.job.session.start import LOCK, in_use, session_dir


def test_a_running_sessions_folder_is_kept_and_an_ended_ones_removed(tmp_path):
    running = session_dir(tmp_path, "alice", "80")  # holds its lock, as the running session's processes do
    ended = tmp_path / "dsportal-alice-79-ended"
    ended.mkdir()
    (ended / LOCK).write_text("")  # its session's processes are gone: no one holds the lock
    older = tmp_path / "dsportal-alice-70-older"  # a folder of a session before the locks
    older.mkdir()
    new = session_dir(tmp_path, "alice", "81")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([running.name, new.name])
    assert in_use(running) and in_use(new) and not in_use(tmp_path)
