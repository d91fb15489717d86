"""How a run's processes find each other (spawner/job/runs/distributed.py): the pure builders, the private folder."""

from __future__ import annotations

import os
import stat

from spawner.job.runs.distributed import (
    INIT,
    gloo_contexts,
    init_url,
    launch_environment,
    local_rank_environment,
    private_folder,
    proof,
    slurm_rank_environment,
    srun_argv,
)


def test_srun_starts_one_task_per_gpu_on_every_node_with_the_cores_shared():
    assert srun_argv("/v/python", ["/home/a/train.py", "--epochs", "2"], 2, 4, 32) == [
        "srun",
        "--nodes=2",
        "--ntasks=8",  # not the job's one task per node (srun would take SLURM_NTASKS from the job)
        "--ntasks-per-node=4",
        "--cpus-per-task=8",
        "--kill-on-bad-exit=1",
        "/v/python",
        "-m",
        "spawner.job.runs.distributed",
        "--slurm-task",
        "/home/a/train.py",
        "--epochs",
        "2",
    ]
    assert srun_argv("/v/python", ["t.py"], 3, 2, 1)[:6] == [
        "srun",
        "--nodes=3",
        "--ntasks=6",
        "--ntasks-per-node=2",
        "--cpus-per-task=1",
        "--kill-on-bad-exit=1",
    ]


def test_the_processes_get_the_private_store_and_no_tcp_rendezvous():
    env = {"HOME": "/home/a", "MASTER_ADDR": "node001", "MASTER_PORT": "29500", "TORCHELASTIC_RUN_ID": "7"}
    assert launch_environment(env, "/home/a/.dsportal-dist-x1", 0xAB) == {
        "HOME": "/home/a",
        INIT: "file:///home/a/.dsportal-dist-x1/store",
        "NCCL_SOCKET_MAGIC": "0x00000000000000ab",
    }
    assert init_url("/h/.dsportal-dist-q") == "file:///h/.dsportal-dist-q/store"


def test_ranks_on_one_node_in_torchruns_names():
    assert local_rank_environment({"A": "1"}, 2, 4) == {
        "A": "1",
        "RANK": "2",
        "LOCAL_RANK": "2",
        "WORLD_SIZE": "4",
        "LOCAL_WORLD_SIZE": "4",
        "GROUP_RANK": "0",
    }


def test_ranks_from_slurms_task_numbers():
    # what srun set in the fourth task of `srun --nodes=2 --ntasks=4 --ntasks-per-node=2` on the dev cluster
    task = {
        "SLURM_PROCID": "3",
        "SLURM_LOCALID": "1",
        "SLURM_NODEID": "1",
        "SLURM_NTASKS": "4",
        "SLURM_STEP_NUM_TASKS": "4",
        "SLURM_STEP_NUM_NODES": "2",
    }
    assert slurm_rank_environment(task) == task | {
        "RANK": "3",
        "LOCAL_RANK": "1",
        "WORLD_SIZE": "4",
        "LOCAL_WORLD_SIZE": "2",
        "GROUP_RANK": "1",
    }


def test_a_proof_is_bound_to_its_direction_and_the_secret():
    secret = b"s" * 32
    assert proof(secret, 0, 1, 0) == proof(secret, 0, 1, 0)
    assert len({proof(secret, 0, 1, 0), proof(secret, 1, 0, 0), proof(secret, 0, 1, 1), proof(b"t" * 32, 0, 1, 0)}) == 4


def test_one_set_of_gloo_connections_per_interface():
    assert [gloo_contexts(e) for e in ({}, {"GLOO_SOCKET_IFNAME": "ib0"}, {"GLOO_SOCKET_IFNAME": "ib0,eth0"})] == [
        1,
        1,
        2,
    ]


def test_the_private_folder_is_the_users_alone_and_unguessable(tmp_path):
    one, two = private_folder(str(tmp_path)), private_folder(str(tmp_path))
    assert one != two and os.path.dirname(one) == str(tmp_path)
    assert os.path.basename(one).startswith(".dsportal-dist-") and len(os.path.basename(one)) >= 20
    assert stat.S_IMODE(os.stat(one).st_mode) == 0o700
    secret = os.path.join(one, "secret")
    assert stat.S_IMODE(os.stat(secret).st_mode) == 0o600 and os.path.getsize(secret) == 32
    assert open(secret, "rb").read() != open(os.path.join(two, "secret"), "rb").read()
