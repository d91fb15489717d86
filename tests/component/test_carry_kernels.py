"""Variables carried from one real kernel into another, as a continued session's kernels would run
spawner/job/continuation/carry.py: a trained torch model (the new kernel's predictions equal the old one's; a
socket and a generator the old kernel held are named, not carried), and an R kernel's data frame and fitted model
(save.image's own means; an open connection named)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from jupyter_client.manager import start_new_kernel

from spawner.job.continuation.carry import R_FILE, private_folder, r_dump_code, r_load_code, r_report

ROOT = Path(__file__).resolve().parents[2]

TRAIN = """
import socket, torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(64, 4), torch.randn(64, 2)
for _ in range(20):
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
history = {"loss": float(loss)}
held = socket.socket()
batches = (x[i:i + 8] for i in range(0, 64, 8))
"""


def run(client, code: str) -> str:
    printed: list[str] = []
    reply = client.execute_interactive(
        code, timeout=120, output_hook=lambda msg: printed.append(msg["content"].get("text", ""))
    )
    assert reply["content"]["status"] == "ok", reply["content"]
    return "".join(printed)


def kernel(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the kernel imports the portal's code, as a session's does
    return start_new_kernel(kernel_name="python3", startup_timeout=120)


def test_a_trained_model_is_carried_into_a_new_kernel_with_its_predictions(tmp_path, monkeypatch):
    folder = tmp_path / "carry"
    old_manager, old = kernel(monkeypatch)
    try:
        run(old, TRAIN)
        before = json.loads(run(old, "import json; print(json.dumps(model(x).tolist()))"))
        dumped = json.loads(
            run(
                old,
                "from pathlib import Path\nfrom spawner.job.continuation.carry import dump\n"
                f"print(json.dumps(dump(get_ipython().user_ns, Path({str(folder)!r}), 10**9, 60)))",
            )
        )
    finally:
        old.stop_channels()
        old_manager.shutdown_kernel(now=True)
    assert dumped["carried"] == ["history", "loss", "model", "optimizer", "x", "y"]
    assert dumped["not"] == {
        "batches": "a generator cannot be carried into a new job",
        "held": "a socket cannot be carried into a new job",
    }
    new_manager, new = kernel(monkeypatch)
    try:
        loaded = json.loads(
            run(
                new,
                "import json\nfrom pathlib import Path\nfrom spawner.job.continuation.carry import load, report_words\n"
                f"report = load(get_ipython().user_ns, Path({str(folder)!r}))\n"
                "print(json.dumps({**report, 'words': report_words(report)}))",
            )
        )
        after = json.loads(run(new, "print(json.dumps(model(x).tolist()))"))
        assert run(new, "print(sorted(k for k in history))") == "['loss']\n"
    finally:
        new.stop_channels()
        new_manager.shutdown_kernel(now=True)
    assert after == before
    assert loaded["words"] == "6 variables carried, 2 not (a generator, a socket)"
    assert not os.access(folder, os.W_OK) or oct(folder.stat().st_mode & 0o777) == "0o700"


def test_an_r_kernels_data_frame_is_carried_and_a_connection_named(tmp_path):
    folder = private_folder(tmp_path / "carry-r")
    old_manager, old = start_new_kernel(kernel_name="ir", startup_timeout=120)
    try:
        run(old, "frame <- data.frame(x = 1:5, y = c(2.5, 3, 1, 4, 8)); fit <- lm(y ~ x, data = frame)")
        run(old, f"con <- file({str(tmp_path / 'notes.txt')!r}, 'w'); tag <- 'run 7'")
        before = run(old, "cat(format(coef(fit), digits = 12))")
        dumped = r_report(run(old, r_dump_code(folder, 10**9)))
    finally:
        old.stop_channels()
        old_manager.shutdown_kernel(now=True)
    assert dumped == {
        "carried": ["fit", "frame", "tag"],
        "not": {"con": "a file cannot be carried into a new job"},
    }
    assert oct((folder / R_FILE).stat().st_mode & 0o777) == "0o600"
    new_manager, new = start_new_kernel(kernel_name="ir", startup_timeout=120)
    try:
        loaded = r_report(run(new, r_load_code(folder)))
        after = run(new, "cat(format(coef(fit), digits = 12))")
        assert run(new, "cat(nrow(frame), tag)") == "5 run 7"
    finally:
        new.stop_channels()
        new_manager.shutdown_kernel(now=True)
    assert loaded["carried"] == ["fit", "frame", "tag"] and after == before
