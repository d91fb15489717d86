"""Every template notebook runs top to bottom, headless, on the CPU, with the real frameworks."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.support.notebooks import NOTEBOOKS, STEP_LINE, TRAINING, run


def final_accuracy(text: str) -> float:
    return float(re.findall(r"^Test Accuracy (\d\.\d{4})$", text, re.M)[-1])


def event_files(folder: Path) -> list[Path]:
    return list(folder.rglob("events.out.tfevents.*"))


@pytest.mark.parametrize("name, logs", [("tensorflow-mnist.ipynb", "tensorflow"), ("pytorch-mnist.ipynb", "pytorch")])
def test_framework_notebooks_train_on_the_fallback_digits(tmp_path, name, logs):
    # default epochs and batch size; only the data path is pinned to a place without MNIST
    text = run(name, tmp_path, data_path=str(tmp_path / "no-mnist.npz"), log_every=20)
    assert "Data set: scikit-learn's handwritten digits (MNIST not found at" in text
    assert "Device: CPU (no GPU in this session)" in text
    steps = [line for line in text.splitlines() if line.startswith("Epoch") and "Training Accuracy" in line]
    assert steps and all(STEP_LINE.match(line) for line in steps), steps[:3]
    assert steps[0].startswith("Epoch 1 Global Step 1, ")
    assert final_accuracy(text) >= 0.90, text[-500:]
    assert event_files(tmp_path / "logs" / logs)
    # and to MLflow, in the notebook's folder (what "Open MLflow" shows)
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    experiment = client.get_experiment_by_name(name.removesuffix(".ipynb"))
    [mlrun] = client.search_runs([experiment.experiment_id])
    assert mlrun.data.params == {"epochs": "3", "batch_size": "32", "learning_rate": "0.002"}
    assert mlrun.data.metrics["final_test_accuracy"] == pytest.approx(final_accuracy(text), abs=1e-4)
    assert len(client.get_metric_history(mlrun.info.run_id, "test_accuracy")) == len(steps)


def test_multi_gpu_notebook_runs_two_cpu_processes_that_all_report(tmp_path):
    text = run("multi-gpu-pytorch.ipynb", tmp_path, data_path=str(tmp_path / "no-mnist.npz"), log_every=20)
    assert "No GPU in this session: running 2 CPU processes with the gloo backend" in text
    assert re.search(r"^rank 0/2 on cpu: \d+ of 1437 training images$", text, re.M)
    assert re.search(r"^rank 1/2 on cpu: \d+ of 1437 training images$", text, re.M)
    assert re.search(r"^rank 0/2 done: ", text, re.M) and re.search(r"^rank 1/2 done: ", text, re.M)
    assert final_accuracy(text) >= 0.90
    assert event_files(tmp_path / "logs" / "ddp")


def test_tensorboard_notebook_writes_scalars_a_histogram_and_an_image(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    text = run("tensorboard-example.ipynb", tmp_path, steps=20)
    assert "Wrote 20 scalar and histogram steps and one image to logs/tensorboard-example" in text
    [events] = event_files(tmp_path / "logs" / "tensorboard-example")
    acc = EventAccumulator(str(events.parent), size_guidance={"scalars": 0, "histograms": 0, "images": 0})
    acc.Reload()
    tags = acc.Tags()
    assert tags["scalars"] == ["example/decaying_loss"] and len(acc.Scalars("example/decaying_loss")) == 20
    assert tags["histograms"] == ["example/weights"]
    assert tags["images"] == ["example/picture"] and acc.Images("example/picture")[0].width == 64


def test_r_notebook_fits_its_model(tmp_path):
    text = run("r-data-analysis.ipynb", tmp_path)
    assert "R-squared: 0.8268" in text
    assert "Each 1000 lb of weight costs 3.88 miles per gallon" in text


def test_getting_started_runs(tmp_path):
    text = run("getting-started.ipynb", tmp_path)
    assert "Slurm job:" in text and "python3" in text


def test_notebooks_are_clean_and_parameterized():
    for path in NOTEBOOKS.glob("*.ipynb"):
        nb = json.loads(path.read_text())
        assert all(
            not c.get("outputs") and not c.get("execution_count") for c in nb["cells"] if c["cell_type"] == "code"
        ), path
        if path.name in TRAINING:
            tagged = [c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", [])]
            assert len(tagged) == 1, path
            for name in ("epochs", "batch_size", "data_path", "log_dir"):
                assert re.search(rf"^{name} = ", "".join(tagged[0]["source"]), re.M), (path, name)
