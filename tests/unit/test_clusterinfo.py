"""What is free: sinfo parsing (spawner/slurmvocab.py) and the per-partition arithmetic, by equality."""

from __future__ import annotations

import pytest

from portal.config import load_config
from spawner.hub.slurm.clusterinfo import PartitionAvailability, availability, starts_now
from spawner.slurmvocab import NodeState, UnreadableAnswer, gpu_count, parse_sinfo, sinfo_nodes_argv

SINFO = (
    "node001|sxm2*|mix|gpu:4|gpu:1(IDX:0)|8/32/0/40|49152|393216|\n"
    "node002|sxm2*|idle|gpu:v100:4(S:0-1)|gpu:v100:0(IDX:N/A)|0/40/0/40|0|393216|\n"
    "node003|sxm2*|drain|gpu:4|gpu:0|0/40/0/40|0|393216|\n"
    "node004|pcie|mix|gpu:2,mps:100|gpu:1(IDX:1),mps:0|36/4/0/40|100000|393216|\n"
    "node005|pcie|idle*|gpu:2|gpu:0|0/40/0/40|0|393216|\n"
)


@pytest.fixture
def slurm(a_config_file):
    return load_config(a_config_file).slurm


@pytest.mark.parametrize(
    "gres, count",
    [
        ("gpu:4", 4),
        ("gpu:v100:4(S:0-1)", 4),
        ("gpu:1(IDX:0),mps:100", 1),
        ("(null)", 0),
        ("gpu:a100:2,gpu:v100:1", 3),
        ("mps:100", 0),
    ],
)
def test_gpu_count(gres, count):
    assert gpu_count(gres) == count


def test_parse_sinfo():
    nodes = parse_sinfo(SINFO)
    assert nodes[0] == NodeState("node001", "sxm2", "mix", 4, 1, 32, 40, 393216, 49152)
    assert nodes[3] == NodeState("node004", "pcie", "mix", 2, 1, 4, 40, 393216, 100000)
    assert [n.usable for n in nodes] == [True, True, False, True, False]


@pytest.mark.parametrize("garbage", ["node|sxm2|idle\n", "node001|sxm2|idle|gpu:4|gpu:0|x/y/z/w|0|1|\n"])
def test_unreadable_sinfo_is_an_error(garbage):
    with pytest.raises(UnreadableAnswer):
        parse_sinfo(garbage)


def test_availability_per_partition(slurm):
    result = availability(parse_sinfo(SINFO), slurm)
    assert result["sxm2"] == PartitionAvailability(
        "sxm2", gpus_free=7, gpus_total=12, largest_block=4, nodes_up=2, nodes=3
    )
    assert result["sxm2"].line() == "sxm2: 7 of 12 GPUs free, largest free block 4 on one node"
    # node004 has a GPU free but only 4 idle cores (a GPU brings 8): nothing starts there now
    assert result["pcie"] == PartitionAvailability(
        "pcie", gpus_free=1, gpus_total=4, largest_block=0, nodes_up=1, nodes=2
    )


def test_what_starts_now(slurm):
    nodes = parse_sinfo(SINFO)
    assert [starts_now(nodes, "sxm2", g, slurm) for g in (0, 1, 3, 4)] == [True, True, True, True]
    assert [starts_now(nodes, "pcie", g, slurm) for g in (0, 1, 2)] == [True, False, False]


def test_a_partition_with_no_node_up_says_so(slurm):
    down = parse_sinfo("node003|sxm2*|down*|gpu:4|gpu:0|0/0/40/40|0|393216|\n")
    assert availability(down, slurm)["sxm2"].line() == "sxm2: no node is taking jobs"


def test_sinfo_argv(slurm):
    assert sinfo_nodes_argv(slurm.sinfo) == [
        slurm.sinfo,
        "--noheader",
        "--Node",
        "--Format=NodeList:|,Partition:|,StateCompact:|,Gres:|,GresUsed:|,CPUsState:|,AllocMem:|,Memory:|",
    ]
