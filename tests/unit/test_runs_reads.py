"""What a runs request makes the hub read: a notebook parsed outside the hub (a few at once), a page of the jobs.

The parser process and the pipeline run for real here (`head` of a file in tmp_path in place of `sudo -u USER
head`); the page's window, its bounds and the kept sweep counts are pure and compared by equality.
"""

from __future__ import annotations

import asyncio
import sys
import time

import pytest

from portal.settings import SlurmSettings
from spawner.hub.runs import jobspage
from spawner.hub.runs.sweeps import SweepCounts, fold_sweeps
from spawner.hub.slurm import fileparse
from spawner.hub.slurm.client import SlurmError
from spawner.hub.slurm.fileparse import FileParses, ParseRefused, parser_argv
from spawner.notebookparams.__main__ import answer
from spawner.slurmvocab import AccountedJob
from tests.support.jobs import notebook_text

MIB = 1024 * 1024
NOTEBOOK = notebook_text(["print(lr)"], "lr = 0.01  # learning rate\nepochs = 2\n")
DECLARED = [
    {"name": "lr", "type": "float", "default": "0.01", "help": "learning rate"},
    {"name": "epochs", "type": "int", "default": "2", "help": ""},
]


def accounted(job_id: str, state: str = "COMPLETED") -> AccountedJob:
    return AccountedJob(job_id, "alice", "cpu", state, "0:0", "", "", "", "0:01", 1, "node001", "1:00:00")


# --- the parser process's answer (pure) ----------------------------------------------------------
def test_the_parser_answers_the_parameters_cell_and_nothing_of_the_file():
    assert answer(NOTEBOOK.encode(), "a.ipynb", MIB, "notebook") == {"parameters": DECLARED}


def test_the_parser_refuses_with_words_a_file_too_large_not_json_or_not_text():
    assert answer(b"x" * 11, "big.ipynb", 10, "notebook") == {
        "refused": "big.ipynb is larger than 0 MiB; clear its outputs and save it again."
    }
    assert answer(b"{", "a.ipynb", MIB, "notebook")["refused"].startswith(
        "a.ipynb is not a valid notebook: it is not JSON"
    )
    assert answer(b"\xff", "a.ipynb", MIB, "notebook")["refused"].startswith(
        "a.ipynb is not a valid notebook: it is not UTF-8"
    )


def test_a_script_is_only_measured():
    assert answer(b"print(1)\n", "a.py", MIB, "script") == {"parameters": []}
    assert "larger than 1 MiB" in answer(b"x" * (MIB + 1), "a.py", MIB, "script")["refused"]


def test_the_parser_runs_the_portals_python_isolated_from_user_paths():
    assert parser_argv("/venv/bin/python", "a.ipynb", 20 * MIB, "notebook") == [
        "/usr/bin/nice",
        "-n",
        "19",
        "/venv/bin/python",
        "-s",
        "-P",
        "-m",
        "spawner.notebookparams",
        "a.ipynb",
        str(20 * MIB),
        "notebook",
    ]
    environment = fileparse.parser_environment({"PATH": "/bin", "JUPYTERHUB_CRYPT_KEY": "secret"})
    assert environment["PYTHONPATH"] == fileparse.PORTAL_ROOT and "JUPYTERHUB_CRYPT_KEY" not in environment


# --- the pipeline, for real ----------------------------------------------------------------------
@pytest.fixture
def parses() -> FileParses:
    return FileParses(SlurmSettings.model_construct(command_timeout=20), sys.executable)


def parsed(parses: FileParses, path, max_bytes: int = MIB, kind: str = "notebook") -> dict:
    head = ["head", "-c", str(max_bytes + 1), "--", str(path)]
    return asyncio.run(parses._pipeline(head, parser_argv(sys.executable, "a.ipynb", max_bytes, kind)))


def test_head_pipes_the_file_into_the_parser(parses, tmp_path):
    (tmp_path / "a.ipynb").write_text(NOTEBOOK)
    assert parsed(parses, tmp_path / "a.ipynb") == {"parameters": DECLARED}


def test_a_file_head_cannot_read_is_heads_error(parses, tmp_path):
    with pytest.raises(SlurmError) as failed:
        parsed(parses, tmp_path / "missing.ipynb")
    assert "No such file" in failed.value.stderr


def test_a_parse_that_runs_out_of_memory_is_refused_with_words_not_a_hub_error(parses, tmp_path):
    (tmp_path / "a.ipynb").write_text(NOTEBOOK)
    head = ["head", "-c", str(MIB), "--", str(tmp_path / "a.ipynb")]
    with pytest.raises(ParseRefused) as refused:
        asyncio.run(parses._pipeline(head, [sys.executable, "-c", "import sys; sys.stdin.read(); raise MemoryError"]))
    assert (refused.value.status, str(refused.value)) == (
        400,
        "The file could not be read as a notebook: it takes more memory than a notebook may; clear its outputs "
        "and save it again.",
    )


def test_one_user_gets_two_parses_at_once_everyone_four_then_a_short_wait(parses, monkeypatch):
    monkeypatch.setattr(fileparse, "PARSE_WAIT", 0.2)

    async def hold(user: str, seconds: float) -> str:
        try:
            async with parses._slot(user):
                await asyncio.sleep(seconds)
                return "parsed"
        except ParseRefused as e:
            return str(e.status)

    async def crowd() -> list[str]:
        alice = [hold("alice", 0.5) for _ in range(3)]
        others = [hold(name, 0.5) for name in ("bob", "carol", "dave")]
        return await asyncio.gather(*alice, *others)

    # alice's third is refused at once; of bob, carol and dave, the one who finds the four slots taken waits
    # 0.2 s, less than the others' 0.5 s: refused
    assert sorted(asyncio.run(crowd())) == ["429", "503", *["parsed"] * 4]
    assert parses._users == {}


# --- a page of the jobs --------------------------------------------------------------------------
def test_page_bounds_default_and_words():
    assert jobspage.page_bounds("100", "0") == (100, 0)
    assert jobspage.page_bounds("500", "4500") == (500, 4500)
    # a page far down would build every row before it (the attack: offset=999999999)
    for limit, offset in (("0", "0"), ("501", "0"), ("x", "0"), ("10", "-1"), ("10", "9999999999"), ("1", "5000")):
        with pytest.raises(ValueError):
            jobspage.page_bounds(limit, offset)


def test_the_window_keeps_queued_entries_and_the_newest_finished_ones_and_counts_the_rest():
    entries = [accounted(str(n)) for n in range(1, 11)] + [accounted("3000", "RUNNING"), accounted("50_1")]
    found = jobspage.window(entries, sweeps={"50"}, known={"9"}, reach=3)
    assert [j.job_id for j in found.accounted] == ["3000", "10", "9", "8", "7"]
    assert found.left_out == 6  # 1..6: counted, not built


def test_a_page_is_a_slice_with_the_total():
    rows = [{"job_id": str(n)} for n in range(5)]
    assert jobspage.page(rows, 2, 1, 10) == {"jobs": rows[1:3], "total": 15, "limit": 2, "offset": 1}


def test_a_sweeps_counts_are_kept_while_the_listing_is_the_same():
    run = {
        "job_id": "178",
        "submitted_ts": time.time() - 3600,
        "settings": {"path": "t.ipynb", "sweep": {"tasks": 2}},
        "sweep": {"tasks": 2, "at_once": 2},
    }
    kept: dict = {}
    computed = []

    def memo(key, compute):
        if key not in kept:
            computed.append(key)
            kept[key] = compute()
        return kept[key]

    rows = [{"job_id": "178", "active": True}, {"job_id": "178_0", "active": False}]
    for _ in range(3):
        folded = fold_sweeps([dict(r) for r in rows], [run], [], [accounted("178_0"), accounted("178_1")], 10, memo)
        assert [(r["job_id"], r["sweep"]["counts"]["completed"]) for r in folded] == [("178", 2)]
    assert computed == [("178", 2, True)]
    assert kept[("178", 2, True)] == SweepCounts(
        {"waiting": 0, "running": 0, "completed": 2, "failed": 0, "timeout": 0, "cancelled": 0, "other": 0}, False, ""
    )


def test_20000_accounted_jobs_make_a_page_in_milliseconds():
    from spawner.hub.runs.board import job_rows

    entries = [accounted(str(n), "FAILED" if n % 7 else "COMPLETED") for n in range(1, 20_001)]
    started = time.perf_counter()
    found = jobspage.window(entries, set(), set(), 100)
    page = jobspage.page(job_rows([], found.accounted, [], {}), 100, 0, found.left_out)
    took = time.perf_counter() - started
    print(f"a page of 100 of 20,000 accounted jobs: {took * 1000:.1f} ms")  # ~20 ms idle; the whole list: 0.4-1.2 s
    assert (page["total"], page["jobs"][0]["job_id"], len(page["jobs"])) == (20_000, "20000", 100)
    # what keeps it fast, asserted as work rather than time (a timed bound fails on a loaded machine): rows are
    # built for the page's 100 newest entries only, never for the 20,000
    assert len(found.accounted) == 100 and found.left_out == 19_900
