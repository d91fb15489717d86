"""What is free: sinfo parsing (spawner/slurmvocab.py) and the per-partition arithmetic, by equality."""

from __future__ import annotations

import pytest

from portal.config import load_config
from portal.settings.slurm import Partition
from spawner.hub.slurm.clusterinfo import (
    PartitionAvailability,
    TypeAvailability,
    availability,
    partition_gpu_types,
    starts_now,
)
from spawner.slurmgres import gpu_count, gpus_by_type
from spawner.slurmvocab import NodeState, UnreadableAnswer, parse_sinfo, sinfo_nodes_argv

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
    assert nodes[0] == NodeState("node001", "sxm2", "mix", 4, 1, 32, 40, 393216, 49152, (("", 4, 1),), gpus_held=(0,))
    assert nodes[1].gpu_types == (("v100", 4, 0),)
    assert nodes[3] == NodeState("node004", "pcie", "mix", 2, 1, 4, 40, 393216, 100000, (("", 2, 1),), gpus_held=(1,))
    assert [n.usable for n in nodes] == [True, True, False, True, False]


@pytest.mark.parametrize("garbage", ["node|sxm2|idle\n", "node001|sxm2|idle|gpu:4|gpu:0|x/y/z/w|0|1|\n"])
def test_unreadable_sinfo_is_an_error(garbage):
    with pytest.raises(UnreadableAnswer):
        parse_sinfo(garbage)


def test_availability_per_partition(slurm):
    result = availability(parse_sinfo(SINFO), slurm)
    assert result["sxm2"] == PartitionAvailability(
        "sxm2",
        gpus_free=7,
        gpus_total=12,
        largest_block=4,
        nodes_up=2,
        nodes=3,
        types=(TypeAvailability("v100", "v100", gpus_free=4, gpus_total=4, largest_block=4),),
        cores_free=72,
        cores_total=120,
    )
    assert result["sxm2"].line() == "sxm2: 7 of 12 GPUs free, largest free block 4 on one node"
    # node004 has a GPU free but only 4 idle cores (a GPU brings 8): nothing starts there now
    assert result["pcie"] == PartitionAvailability(
        "pcie", gpus_free=1, gpus_total=4, largest_block=0, nodes_up=1, nodes=2, cores_free=4, cores_total=80
    )


def test_a_cpu_only_partition_says_its_cores(slurm):
    cpu = parse_sinfo(
        "node006|cpu|mix|(null)|gpu:0|4/36/0/40|16384|393216|\nnode007|cpu|idle|(null)|gpu:0|0/40/0/40|0|393216|\n"
    )
    settings = slurm.model_copy(update={"partitions": [Partition(name="cpu", max_gpus=0)]})
    assert availability(cpu, settings)["cpu"].line() == "cpu: CPU only, 76 of 80 cores free"
    assert starts_now(cpu, "cpu", 0, settings)


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
        "--all",
        "--Node",
        "--Format=NodeList:|,Partition:|,StateCompact:|,Gres:|,GresUsed:|,CPUsState:|,AllocMem:|,Memory:|",
    ]


# Two GPU types in one partition (the dev cluster's: node001 V100, node002 A100), and a hidden type
TYPED = (
    "node001|sxm2*|mix|gpu:v100:4(S:0-1)|gpu:v100:3(IDX:0-2)|24/16/0/40|147456|393216|\n"
    "node002|sxm2*|mix|gpu:a100:4(S:0-1)|gpu:a100:1(IDX:0)|8/32/0/40|49152|393216|\n"
    "node003|sxm2*|idle|gpu:t4:2,gpu:a100:2|gpu:t4:0,gpu:a100:0|0/40/0/40|0|393216|\n"
)


@pytest.mark.parametrize(
    "gres, types",
    [
        ("gpu:4", {"": 4}),
        ("gpu:v100:4(S:0-1)", {"v100": 4}),
        ("gpu:a100:2(IDX:0-1),gpu:v100:1(IDX:2)", {"a100": 2, "v100": 1}),
        ("gpu:a100:0(IDX:N/A)", {"a100": 0}),
        ("gpu:1(IDX:0),mps:100", {"": 1}),
        ("(null)", {}),
        ("mps:100", {}),
    ],
)
def test_gpus_by_type(gres, types):
    assert gpus_by_type(gres) == types


def test_each_gpu_type_of_a_partition_is_counted_apart_and_hidden_ones_left_out(a_config_file):
    import yaml

    data = yaml.safe_load(a_config_file.read_text())
    data["slurm"]["gpu_types"] = {"v100": "V100 32 GB", "a100": "A100 80 GB"}
    data["slurm"]["hidden_gpu_types"] = ["t4"]
    a_config_file.write_text(yaml.safe_dump(data))
    slurm = load_config(a_config_file).slurm
    nodes = parse_sinfo(TYPED)
    assert partition_gpu_types(nodes) == {"sxm2": {"v100", "a100", "t4"}}
    sxm2 = availability(nodes, slurm)["sxm2"]
    assert sxm2.types == (
        TypeAvailability("a100", "A100 80 GB", gpus_free=5, gpus_total=6, largest_block=3),
        TypeAvailability("v100", "V100 32 GB", gpus_free=1, gpus_total=4, largest_block=1),
    )
    assert sxm2.to_dict()["types_summary"] == (
        "A100 80 GB: 5 of 6 free, largest block 3 · V100 32 GB: 1 of 4 free, largest block 1"
    )
    assert (sxm2.gpus_free, sxm2.gpus_total) == (8, 12)  # every type, the hidden one too
    # node002 has 3 A100 free but 32 idle cores: 3 fit (24 cores); node003's 2 A100 fit too
    assert [starts_now(nodes, "sxm2", g, slurm, "a100") for g in (1, 2, 3, 4)] == [True, True, True, False]
    assert [starts_now(nodes, "sxm2", g, slurm, "v100") for g in (1, 2)] == [True, False]
    assert starts_now(nodes, "sxm2", 4, slurm, "")  # any type: node003's two T4 and two A100 together
    assert starts_now(nodes, "sxm2", 2, slurm, "t4") and not starts_now(nodes, "sxm2", 3, slurm, "t4")
    # a use Slurm printed without its type still takes GPUs of the node's one type
    untyped_use = parse_sinfo("node009|sxm2*|mix|gpu:a100:4(S:0-1)|gpu:2(IDX:0-1)|16/24/0/40|98304|393216|\n")
    assert availability(untyped_use, slurm)["sxm2"].types[0].gpus_free == 2
    # a type no session could ask for by name (not a name the option takes) is not offered
    odd = parse_sinfo("node010|sxm2*|idle|gpu:_odd:2|gpu:_odd:0|0/40/0/40|0|393216|\n")
    assert partition_gpu_types(odd) == {"sxm2": set()} and availability(odd, slurm)["sxm2"].types == ()


def test_a_shared_answer_waits_for_a_slow_refresh_only_as_long_as_asked_when_an_older_one_is_at_hand():
    import asyncio

    from spawner.hub.slurm.clusterinfo import SharedAnswers

    async def scenario():
        answers = SharedAnswers(max_age=0)
        release = asyncio.Event()
        asked = []

        async def ask():
            asked.append(1)
            if len(asked) > 1:
                await release.wait()  # Slurm, slow this time
            return len(asked)

        assert await answers.get("queue", ask, wait=0.05) == 1  # none at hand: the caller waits for it
        assert await answers.get("queue", ask, wait=0.05) == 1  # slow: the older answer, at once
        assert await answers.get("queue", ask, wait=0.05) == 1 and len(asked) == 2  # one question under way
        release.set()
        for _ in range(3):
            await asyncio.sleep(0)
        assert answers.cached("queue", any_age=True) == 2  # the slow answer arrived for the next caller
        assert await answers.get("queue", ask) == 3  # without `wait`: always the new answer

    asyncio.run(scenario())


def test_a_refresh_that_fails_unheard_is_no_unretrieved_error():
    import asyncio
    import gc

    from spawner.hub.slurm.clusterinfo import SharedAnswers

    unretrieved = []

    async def scenario():
        asyncio.get_running_loop().set_exception_handler(lambda loop, context: unretrieved.append(context))
        answers = SharedAnswers(max_age=0)
        release = asyncio.Event()
        calls = []

        async def ask():
            calls.append(1)
            if len(calls) > 1:
                await release.wait()
                raise RuntimeError("Slurm is away")
            return "first"

        assert await answers.get("queue", ask, wait=0.01) == "first"
        assert await answers.get("queue", ask, wait=0.01) == "first"  # the refresh goes on, unheard
        release.set()
        for _ in range(5):
            await asyncio.sleep(0)
        gc.collect()
        with pytest.raises(RuntimeError):  # the next caller without an older answer to fall back on hears it
            await SharedAnswers(max_age=0).get("other", ask)

    asyncio.run(scenario())
    gc.collect()
    assert unretrieved == []
