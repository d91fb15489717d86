"""TensorBoard instances in the Jupyter server: TensorBoard's own WSGI app, no listener."""

from __future__ import annotations

import json
import threading

import pytest
from werkzeug.test import Client

from spawner.jupyter.tensorboard.instances import LogdirError, TensorBoards, TooManyError, instance_id
from tests.support.http import wait_until


def write_scalars(folder, values):
    from tensorboardX import SummaryWriter

    writer = SummaryWriter(str(folder))
    for step, value in enumerate(values):
        writer.add_scalar("loss", value, step)
    writer.close()


def reloaders() -> int:
    return sum(1 for t in threading.enumerate() if t.name == "Reloader")


def test_instances_are_per_folder_reused_and_stopped(tmp_path):
    (tmp_path / "logs").mkdir()
    made = []
    boards = TensorBoards(
        tmp_path,
        "/user/alice/",
        factory=lambda path, prefix: (made.append((path, prefix)) or "app", lambda: made.append("stopped")),
    )
    first, started = boards.open("logs")
    assert started and first.logdir == str(tmp_path / "logs")
    assert first.url == f"/user/alice/dsportal/tensorboard/{instance_id(tmp_path / 'logs')}/"
    again, started = boards.open(str(tmp_path / "logs") + "/")
    assert (again is first, started) == (True, False)
    assert made == [(tmp_path / "logs", first.url.rstrip("/"))]
    assert boards.close(first.id) and made[-1] == "stopped"
    assert not boards.close(first.id) and boards.list() == []


@pytest.mark.parametrize(
    "logdir, message",
    [
        ("nope", "nope is not a folder"),
        ("", "Choose a folder"),
        ("a\x00b", "Choose a folder"),
        (None, "Choose a folder"),
    ],
)
def test_bad_folders_are_refused_with_a_reason(tmp_path, logdir, message):
    boards = TensorBoards(tmp_path, "/user/alice/", factory=lambda p, x: pytest.fail("started"))
    with pytest.raises(LogdirError, match=message):
        boards.open(logdir)


def test_a_session_runs_at_most_its_cap_of_tensorboards(tmp_path):
    for name in ("a", "b", "c"):
        (tmp_path / name).mkdir()
    boards = TensorBoards(tmp_path, "/user/alice/", factory=lambda p, x: ("app", lambda: None), max_instances=2)
    first, _ = boards.open("a")
    boards.open("b")
    with pytest.raises(TooManyError, match="2 TensorBoards are open, the most a session may run; stop one"):
        boards.open("c")
    assert boards.open("a") == (first, False)  # one already open is still handed out
    boards.close(first.id)
    assert boards.open("c")[1] is True


def test_huge_folders_are_refused(tmp_path):
    storage = tmp_path / "isilon"
    (storage / "project").mkdir(parents=True)
    (tmp_path / "home" / "logs").mkdir(parents=True)
    (tmp_path / "home" / "isilon").symlink_to(storage)
    boards = TensorBoards(
        tmp_path / "home", "/user/alice/", factory=lambda p, x: ("app", lambda: None), big_roots=(str(storage),)
    )
    for logdir in ("/", "/usr", str(tmp_path / "home"), ".", "isilon", str(storage)):
        with pytest.raises(LogdirError, match="too big a folder for TensorBoard, which rereads all of it every 5 s"):
            boards.open(logdir)
    assert boards.open("logs")[1] and boards.open("isilon/project")[1]


def test_real_tensorboard_serves_the_scalars_and_stops_reloading(tmp_path):
    write_scalars(tmp_path / "logs" / "run1", [1.0, 0.5, 0.25])
    before = reloaders()
    boards = TensorBoards(tmp_path, "/user/alice/")
    instance, _ = boards.open("logs")
    client = Client(instance.app)
    prefix = instance.url.rstrip("/")
    wait_until(
        lambda: json.loads(client.get(f"{prefix}/data/runs").get_data()) == ["run1"], 30, "TensorBoard loading the run"
    )
    data = json.loads(client.get(f"{prefix}/data/plugin/scalars/scalars?run=run1&tag=loss").get_data())
    assert [(step, value) for _, step, value in data] == [(0, 1.0), (1, 0.5), (2, 0.25)]
    page = client.get(f"{prefix}/")
    assert page.status_code == 200 and b"<title>TensorBoard</title>" in page.get_data()
    assert reloaders() == before + 1
    boards.close(instance.id)
    wait_until(lambda: reloaders() == before, 15, "the reload thread ending after stop")


@pytest.mark.parametrize(
    "headers, same",
    [
        ({"Host": "127.0.0.1:8000", "Origin": "http://127.0.0.1:8000"}, True),
        (
            {
                "Host": "alice.localhost:8000",
                "Referer": "https://alice.localhost:8000/user/alice/dsportal/tensorboard/x/",
            },
            True,
        ),
        ({"Host": "alice.localhost:8000", "Origin": "https://bob.localhost:8000"}, False),
        ({"Host": "127.0.0.1:8000", "Origin": "null"}, False),
        ({"Host": "127.0.0.1:8000"}, False),  # no Origin, no Referer: the XSRF token is needed
    ],
)
def test_tensorboard_posts_skip_the_xsrf_token_only_from_the_same_origin(headers, same):
    from spawner.jupyter.tensorboard.handlers import same_origin

    assert same_origin(headers) is same
