"""Data-parallel training of a digit classifier: one process per GPU (or 2 on the CPU).

Started by multi-gpu-pytorch.ipynb through the portal's launcher, which gives each process its rank and
a private folder where the processes meet (never a TCP port another account could reach, as torchrun's
is).  Also from a terminal of the session, or in an sbatch script over several nodes:
    python3 -m spawner.job.runs.distributed --per-node 4 ddp_train.py --epochs 1
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

from spawner.job.runs.distributed import init_process_group


def say(message: str) -> None:
    """One write per line: the processes share one output, and their lines must not interleave."""
    sys.stdout.write(message + "\n")
    sys.stdout.flush()


def load_digits_data(path: str, seed: int = 0):
    """MNIST (Keras' npz format) when it is at `path`, else scikit-learn's 8x8 digits; never downloads."""
    if os.path.exists(path):
        with np.load(path) as d:
            x_train, y_train, x_test, y_test = d["x_train"], d["y_train"], d["x_test"], d["y_test"]
        scale, description = 255.0, f"MNIST from {path}"
    else:
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split

        digits = load_digits()
        x_train, x_test, y_train, y_test = train_test_split(
            digits.images, digits.target, test_size=0.2, random_state=seed, stratify=digits.target
        )
        scale, description = 16.0, f"scikit-learn's handwritten digits (MNIST not found at {path})"
    as_x = lambda x: torch.from_numpy((x / scale).astype("float32")).unsqueeze(1)  # noqa: E731
    as_y = lambda y: torch.from_numpy(y.astype("int64"))  # noqa: E731
    return as_x(x_train), as_y(y_train), as_x(x_test), as_y(y_test), description


def make_model(side: int) -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(64 * (side // 4) ** 2, 128),
        nn.ReLU(),
        nn.Linear(128, 10),
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default="nccl" if torch.cuda.is_available() else "gloo")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.002)
    parser.add_argument("--log-every", type=int, default=100)
    parser.add_argument("--data-path", default=os.path.expanduser("~/isilon/datasets/mnist/mnist.npz"))
    parser.add_argument("--log-dir", default="logs/ddp")
    args = parser.parse_args()

    # the portal's: the process group through the launcher's private folder, then every peer proven
    rank, world, local_rank = init_process_group(args.backend)
    device = torch.device(f"cuda:{local_rank}") if args.backend == "nccl" else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    torch.manual_seed(0)

    x_train, y_train, x_test, y_test, description = load_digits_data(args.data_path)
    train = TensorDataset(x_train, y_train)
    sampler = DistributedSampler(train, num_replicas=world, rank=rank, shuffle=True, seed=0)
    loader = DataLoader(train, batch_size=args.batch_size, sampler=sampler)
    say(f"rank {rank}/{world} on {device}: {len(sampler)} of {len(train)} training images")
    if rank == 0:
        say(f"Data set: {description}")

    model = DistributedDataParallel(
        make_model(x_train.shape[-1]).to(device), device_ids=[local_rank] if device.type == "cuda" else None
    )
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr * world)  # the global batch is `world` times larger
    loss_fn = nn.CrossEntropyLoss()
    writer = None
    if rank == 0:
        from torch.utils.tensorboard import SummaryWriter

        writer = SummaryWriter(args.log_dir)

    def test_accuracy() -> float:
        model.eval()
        with torch.no_grad():
            predicted = model.module(x_test.to(device)).argmax(1).cpu()
        model.train()
        return (predicted == y_test).float().mean().item()

    step, started = 0, time.time()
    for epoch in range(1, args.epochs + 1):
        sampler.set_epoch(epoch)
        for i, (images, labels) in enumerate(loader):
            step += 1
            images, labels = images.to(device), labels.to(device)
            logits = model(images)
            loss = loss_fn(logits, labels)
            optimizer.zero_grad()
            loss.backward()  # DDP averages the gradients of all processes here
            optimizer.step()
            if rank == 0 and i % args.log_every == 0:
                train_acc = (logits.argmax(1) == labels).float().mean().item()
                test_acc = test_accuracy()
                say(f"Epoch {epoch} Global Step {step}, Training Accuracy {train_acc:.4f}")
                say(f"Test Accuracy {test_acc:.4f}")
                writer.add_scalar("test_accuracy", test_acc, step)
    dist.barrier()
    say(f"rank {rank}/{world} done: {step} steps in {time.time() - started:.1f} s")
    if rank == 0:
        say(f"Test Accuracy {test_accuracy():.4f}")
        writer.close()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
