"""A kernel's variables carried into a new kernel (spawner/job/continuation/carry.py): what is carried, what is
named instead, the limits, and a folder another account could have written refused."""

from __future__ import annotations

import json
import os
import socket
import threading

import numpy as np
import pytest
import torch

from spawner.job.continuation.carry import dump, load, r_dump_code, r_load_code, r_report, report_words, user_variables


class Clock:
    def __init__(self, step: float):
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


class FakeGpuTensor:
    """Stands for a CUDA tensor (no GPU here): is_cuda, and cpu()/cuda() that say where it is."""

    def __init__(self, values, is_cuda=True):
        self.values, self.is_cuda = values, is_cuda

    def cpu(self):
        return FakeGpuTensor(self.values, False)

    def cuda(self):
        return FakeGpuTensor(self.values, True)


NOTEBOOK: dict = {"__name__": "__main__"}  # a notebook's cells run in __main__: their functions are carried by value
exec("def square(x):\n    return x * x", NOTEBOOK)
square = NOTEBOOK["square"]


def test_the_users_variables_are_carried_and_whats_not_is_named(tmp_path):
    model = torch.nn.Linear(3, 1)
    data = np.arange(12.0).reshape(3, 4)
    held = socket.socket()
    steps = (i for i in range(3))
    opened = open(tmp_path / "notes.txt", "w")  # noqa: SIM115 - a file left open in a notebook
    namespace = {
        "In": [], "Out": {}, "_": 1, "_3": 2, "np": np, "get_ipython": print,  # IPython's and modules: left
        "data": data, "lr": 0.01, "name": "run", "model": model, "square": square, "frame": {"a": [1, 2]},
        "held": held, "steps": steps, "opened": opened, "lock": threading.Lock(),
    }  # fmt: skip
    try:
        report = dump(namespace, tmp_path / "carry", max_bytes=10**9, seconds=60)
    finally:
        held.close()
        opened.close()
    assert report["carried"] == ["data", "frame", "lr", "model", "name", "square"]
    assert report["not"] == {
        "held": "a socket cannot be carried into a new job",
        "lock": "a lock cannot be carried into a new job",
        "opened": "an open file cannot be carried into a new job",
        "steps": "a generator cannot be carried into a new job",
    }
    assert oct((tmp_path / "carry").stat().st_mode & 0o777) == "0o700"
    assert {oct(p.stat().st_mode & 0o777) for p in (tmp_path / "carry").iterdir()} == {"0o600"}

    fresh: dict = {}
    loaded = load(fresh, tmp_path / "carry", gpu_available=False)
    assert loaded["carried"] == report["carried"] and loaded["notes"] == {}
    assert np.array_equal(fresh["data"], data) and fresh["lr"] == 0.01 and fresh["frame"] == {"a": [1, 2]}
    x = torch.ones(2, 3)
    assert torch.equal(fresh["model"](x), model(x))  # the trained weights came along
    assert fresh["square"](7) == 49
    assert report_words(loaded) == "6 variables carried, 4 not (a generator, a lock, a socket, an open file)"


def test_user_variables_leave_ipythons_names_and_what_imports_brought():
    namespace = {"In": [], "_i1": "", "os": os, "join": os.path.join, "Thread": threading.Thread, "x": 1, "exit": None}
    assert user_variables({**namespace, "square": square}) == {"x": 1, "square": square}


def test_a_variable_on_a_gpu_comes_back_on_a_gpu_or_on_the_cpu_with_words(tmp_path):
    dump({"weights": FakeGpuTensor([1, 2])}, tmp_path / "c", max_bytes=10**6, seconds=60)
    on_gpu: dict = {}
    assert load(on_gpu, tmp_path / "c", gpu_available=True)["notes"] == {}
    assert on_gpu["weights"].is_cuda and on_gpu["weights"].values == [1, 2]
    on_cpu: dict = {}
    report = load(on_cpu, tmp_path / "c", gpu_available=False)
    assert report["notes"] == {"weights": "on the CPU: this job has no GPU"} and not on_cpu["weights"].is_cuda


def test_the_size_and_the_time_allowed_are_kept(tmp_path):
    big = {"a": np.zeros(1_000_000), "b": np.zeros(10), "c": np.zeros(1_000_000)}  # 8 MB, 80 B, 8 MB
    report = dump(big, tmp_path / "c", max_bytes=10_000_000, seconds=60)
    assert report["carried"] == ["a", "b"] and report["not"] == {
        "c": "8 MB would pass the 0.01 GB allowed for carrying"
    }
    slow = dump({"x": 1, "y": 2, "z": 3}, tmp_path / "d", max_bytes=10**6, seconds=1.5, clock=Clock(1.0))
    assert slow["carried"] == ["x"] and set(slow["not"]) == {"y", "z"}
    assert slow["not"]["z"] == "not written: the 1.5 s for carrying had passed"
    assert report_words(slow) == "1 variable carried, 2 not (out of time)"


def test_a_second_dump_leaves_nothing_of_the_first(tmp_path):
    dump({"old": 1, "kept": 2}, tmp_path / "c", max_bytes=10**6, seconds=60)
    dump({"kept": 3}, tmp_path / "c", max_bytes=10**6, seconds=60)
    fresh: dict = {}
    assert load(fresh, tmp_path / "c", gpu_available=False)["carried"] == ["kept"] and fresh == {"kept": 3}


def test_a_folder_or_file_others_may_write_is_never_read(tmp_path):
    dump({"x": 1}, tmp_path / "c", max_bytes=10**6, seconds=60)
    os.chmod(tmp_path / "c", 0o770)  # a group could plant a pickle: to load it would run its code as this user
    fresh: dict = {}
    report = load(fresh, tmp_path / "c", gpu_available=False)
    assert fresh == {} and report["refused"] == f"{tmp_path / 'c'} is not a private folder of this user's"
    assert report_words(report).startswith("nothing carried: ")
    os.chmod(tmp_path / "c", 0o700)
    os.chmod(tmp_path / "c" / "x.pickle", 0o666)
    report = load(fresh, tmp_path / "c", gpu_available=False)
    assert fresh == {} and report["not"] == {"x": "its file is missing or not private"}
    os.chmod(tmp_path / "c" / "x.pickle", 0o600)
    os.rename(tmp_path / "c" / "x.pickle", tmp_path / "elsewhere.pickle")
    os.symlink(tmp_path / "elsewhere.pickle", tmp_path / "c" / "x.pickle")
    assert load(fresh, tmp_path / "c", gpu_available=False)["not"] == {"x": "its file is missing or not private"}


def test_a_dump_into_a_link_or_anothers_folder_is_refused(tmp_path):
    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "link")
    with pytest.raises(OSError, match="is not a folder of this user's"):
        dump({"x": 1}, tmp_path / "link", max_bytes=10**6, seconds=60)


def test_the_r_kernels_report_line_is_read_and_its_absence_said():
    printed = 'Loading...\ndsportal-carry: {"carried":["fit","frame"],"not":{"con":"a file cannot be carried"}}\n'
    assert r_report(printed) == {"carried": ["fit", "frame"], "not": {"con": "a file cannot be carried"}}
    assert r_report('dsportal-carry: {"carried":"tag","not":[]}') == {"carried": ["tag"], "not": {}}
    assert r_report("Error in save(...)") == {
        "carried": [],
        "not": {},
        "refused": "the R kernel did not say what it carried",
    }


def test_the_r_code_names_its_file_quoted(tmp_path):
    folder = tmp_path / 'it"s here'
    assert f"file = {json.dumps(str(folder / 'workspace.RData'))})" in r_dump_code(folder, 10**9)
    assert f"load({json.dumps(str(folder / 'workspace.RData'))}, envir = .GlobalEnv)" in r_load_code(folder)
