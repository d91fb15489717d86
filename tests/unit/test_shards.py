"""Shares of a GPU (Slurm's gres/shard): sinfo's counts, the options' checks and refusals, what a share brings,
how sbatch asks for it, what is free, and the GPU cap counting a share as its fraction; by equality."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from portal.config import load_config
from spawner.hub.request.form import form_context, render_options_form
from spawner.hub.request.jobrequest import Account, sbatch_argv
from spawner.hub.request.jobspec import session_job
from spawner.hub.request.options import OptionsError, SessionRequest, parse_options
from spawner.hub.request.resources import resources_for
from spawner.hub.request.sessionlimits import Held, gpu_problem
from spawner.hub.slurm.clusterinfo import availability, partition_shards, starts_now
from spawner.slurmgres import shard_count, share_words
from spawner.slurmvocab import parse_sinfo

# node002's four A100 cut in four shares each (gres.conf Name=shard Count=4 File=... per GPU), 5 shards in use
SINFO = (
    "node001|sxm2*|mix|gpu:v100:4(S:0-1)|gpu:v100:1(IDX:0)|8/32/0/40|49152|393216|\n"
    "node002|sxm2*|mix|gpu:a100:4(S:0-1),shard:16(S:0-1)|gpu:a100:0(IDX:N/A),shard:5(IDX:0-1)|10/30/0/40|"
    "61440|393216|\n"
    "node003|cpu|idle|(null)|(null)|0/40/0/40|0|393216|\n"
)


@pytest.fixture
def slurm(a_config_file):
    data = yaml.safe_load(a_config_file.read_text())
    data["slurm"]["partitions"] = [
        {"name": "sxm2", "max_gpus": 4, "default": True, "max_nodes": 2},
        {"name": "cpu", "max_gpus": 0},
    ]
    data["slurm"]["gpu_types"] = {"a100": "A100 80 GB", "v100": "V100 32 GB"}
    data["slurm"]["shards"] = {"per_gpu": 4}
    a_config_file.write_text(yaml.safe_dump(data))
    return load_config(a_config_file).slurm


def test_sinfo_counts_a_nodes_shards_apart_from_its_gpus():
    assert shard_count("gpu:a100:4(S:0-1),shard:16(S:0-1)") == 16
    assert shard_count("gpu:a100:0(IDX:N/A),shard:5(IDX:0-1)") == 5
    assert shard_count("shard:a100:3(IDX:0)") == 3 and shard_count("gpu:4") == 0 and shard_count("(null)") == 0
    nodes = parse_sinfo(SINFO)
    assert [(n.node, n.gpus, n.gpus_used, n.shards, n.shards_used) for n in nodes] == [
        ("node001", 4, 1, 0, 0),
        ("node002", 4, 0, 16, 5),
        ("node003", 0, 0, 0, 0),
    ]
    assert partition_shards(nodes) == {"sxm2": 16, "cpu": 0}


def test_shares_are_said_in_the_same_words_as_the_forms_script():
    # one table for both: spawner/hub/request/resources.py here, templates/static/formrules.js in tests/js
    table = json.loads((Path(__file__).parents[1] / "data" / "shares.json").read_text())
    assert [share_words(shards, per_gpu) for shards, per_gpu, _ in table] == [words for _, _, words in table]


def test_a_share_is_asked_with_no_whole_gpu_and_brings_a_gpus_cores_and_memory_divided(slurm):
    shards = partition_shards(parse_sinfo(SINFO))
    request = parse_options({"shards": 1, "hours": 2}, slurm, shards=shards)
    assert request == SessionRequest("sxm2", 0, 2.0, shards=1)  # no GPU count given: none with a share
    assert parse_options({"gpus": "0", "shards": "3"}, slurm, shards=shards).shards == 3  # the form's strings
    res = resources_for(request, slurm)
    assert (res.gpus, res.shards, res.cpus, res.memory, res.gpu_share) == (0, 1, 2, "12G", 0.25)
    assert res.summary() == "a quarter of a GPU · 2 cores · 12 GB RAM · 2 h on sxm2"
    argv = sbatch_argv(slurm, session_job(slurm, res, Account("alice", "/home/alice"), []))
    assert "--gres=shard:1" in argv and not [a for a in argv if a.startswith("--gres=gpu")]
    assert "--cpus-per-task=2" in argv and "--mem=12G" in argv
    # the admin's own rule
    ruled = slurm.model_copy(update={"shards": slurm.shards.model_copy(update={"cores": 3, "memory": "20G"})})
    assert (
        resources_for(SessionRequest("sxm2", 0, 1.0, shards=2), ruled)
        .summary()
        .startswith("half a GPU · 6 cores · 40 GB RAM")
    )


@pytest.mark.parametrize(
    "options, words",
    [
        ({"shards": 4}, "shards: 4 is out of range; choose a whole number from 1 to 3 (a share is 1/4 of a GPU)"),
        ({"shards": "a lot"}, 'shards: "a lot" is not a whole number; choose a whole number from 1 to 3'),
        ({"shards": True}, "shards: true is not a whole number"),
        ({"shards": 1, "gpus": 2}, "shards: 1 share(s) of a GPU asked together with 2 whole GPU(s); ask for one"),
        (
            {"shards": 1, "partition": "cpu"},
            "shards: partition cpu has no GPUs shared in 1 shard(s) or more; choose partition sxm2, or ask",
        ),
        ({"shards": 1, "gpu_type": "a100"}, "gpu_type: a share comes from partition sxm2's shared GPUs"),
    ],
)
def test_a_share_the_partition_cannot_give_is_refused_in_words(slurm, options, words):
    with pytest.raises(OptionsError) as refused:
        parse_options(options, slurm, shards=partition_shards(parse_sinfo(SINFO)))
    assert str(refused.value).startswith(words), str(refused.value)


def test_shares_on_a_portal_that_offers_none_are_refused_in_words(a_config_file):
    slurm = load_config(a_config_file).slurm  # slurm.shards.per_gpu 0: the default
    with pytest.raises(OptionsError, match="this portal offers no shares of a GPU; ask for whole GPUs"):
        parse_options({"shards": 1}, slurm)
    assert parse_options({"shards": 0, "gpus": 1}, slurm).shards == 0  # none asked: fine


def test_a_gpu_is_whole_or_in_shards_never_both_as_slurm_keeps_it(slurm):
    """What Slurm 22.05 did on the dev cluster: with node002's four A100 held whole, a share waited (Resources);
    with one shard of GPU 0 held, a four-A100 job waited.  sinfo's counts alone said 16 shards free, then 4 GPUs:
    the GPUs' indices in GresUsed tell which GPU each holds."""
    head = "node002|sxm2*|mix|gpu:a100:4(S:0-1),shard:a100:16(S:0-1)|"
    whole = parse_sinfo(head + "gpu:a100:4(IDX:0-3),shard:a100:0(IDX:N/A)|32/8/0/40|196608|393216|\n")
    assert (whole[0].gpus_held, whole[0].gpus_sharded) == ((0, 1, 2, 3), ())
    assert not starts_now(whole, "sxm2", 0, slurm, shards=1)
    assert (availability(whole, slurm)["sxm2"].shards_free, availability(whole, slurm)["sxm2"].largest_shards) == (0, 0)
    one_shard = parse_sinfo(head + "gpu:a100:0(IDX:N/A),shard:a100:1(IDX:0)|2/38/0/40|12288|393216|\n")
    assert not starts_now(one_shard, "sxm2", 4, slurm, "a100") and starts_now(one_shard, "sxm2", 3, slurm, "a100")
    sxm2 = availability(one_shard, slurm)["sxm2"]
    assert (sxm2.gpus_free, sxm2.largest_block, sxm2.shards_free, sxm2.largest_shards) == (3, 3, 15, 3)
    # three GPUs whole and GPU 3 with 3 of its 4 shards taken: one shard left, and only one for a job
    full = parse_sinfo(head + "gpu:a100:3(IDX:0-2),shard:a100:3(IDX:3)|30/10/0/40|184320|393216|\n")
    assert (full[0].gpus_held, full[0].gpus_sharded) == ((0, 1, 2), (3,))
    assert availability(full, slurm)["sxm2"].shards_free == 1 and not starts_now(full, "sxm2", 0, slurm, shards=2)
    assert starts_now(full, "sxm2", 0, slurm, shards=1) and not starts_now(full, "sxm2", 1, slurm, "a100")


def test_what_is_free_counts_shares_where_the_nodes_have_them(slurm):
    nodes = parse_sinfo(SINFO)
    sxm2 = availability(nodes, slurm)["sxm2"]
    assert (sxm2.shards_free, sxm2.shards_total, sxm2.largest_shards, sxm2.shard_label) == (11, 16, 3, "A100 80 GB")
    assert sxm2.line().endswith("largest free block 3 on one node, 11 of 16 shares of a GPU free")
    assert availability(nodes, slurm)["cpu"].shards_total == 0
    assert starts_now(nodes, "sxm2", 0, slurm, shards=3)
    full = parse_sinfo(SINFO.replace("shard:5(IDX:0-1)", "shard:16(IDX:0-3)"))
    assert not starts_now(full, "sxm2", 0, slurm, shards=1) and availability(full, slurm)["sxm2"].largest_shards == 0


def test_the_form_offers_shares_with_their_own_cores_and_memory(slurm):
    context = form_context(slurm)
    assert context["share_choices"] == [(1, "a quarter of a GPU"), (2, "half a GPU"), (3, "3 quarters of a GPU")]
    limits = json.loads(context["limits_json"])
    assert limits["shard_shapes"] == {
        "1": {"cores": 2, "gb": 12},
        "2": {"cores": 4, "gb": 24},
        "3": {"cores": 6, "gb": 36},
    }
    assert limits["per_gpu"] == 4
    html = render_options_form(slurm)
    assert 'name="shards" id="dsportal-shards-2" value="2"' in html and "half a GPU</label>" in html
    assert 'id="dsportal-shards" hidden' in html  # shown by the script where the partition has shards


def test_the_gpu_cap_counts_a_share_as_its_fraction():
    held = [Held("", 0.25), Held("train", 1)]
    assert gpu_problem(held, 0.75, 2, "this session") == ""  # 2 GPUs in all: within the cap
    refused = gpu_problem(held, 1, 2, "this session")
    assert "You hold 1.25 GPUs in 2 sessions (your unnamed session: 0.25, session 'train': 1)" in refused
    assert "asks for 1, so it may ask for at most 0.75" in refused


def test_the_advice_says_when_a_share_of_a_gpu_would_have_fitted():
    from spawner.usage import Allocation, GpuTally, UsageTally, summarise

    def used(mean: int, memory_peak_mib: int) -> UsageTally:
        gpu = GpuTally(0, 10, 9, mean * 10, 100, memory_peak_mib, 81920)
        return UsageTally(gpus=[gpu], samples=10, idle_samples=0, cpu_seconds=3600, memory_peak_mib=8192, seconds=3600)

    offered = Allocation(1, 8, 49152, per_gpu=4)  # one whole A100 on a partition that offers quarters
    assert summarise(used(20, 12000), None, offered)["advice"] == (
        "Your GPU used at most 11.7 GB of its 80.0 GB and was 20% busy on average: a quarter of a GPU would have "
        "fitted; next time ask for a share of a GPU (it often starts sooner)."
    )
    # more than a quarter of its memory, or of its work, or no shares where it ran: the size fitted
    assert summarise(used(20, 30000), None, offered)["advice"] == "Your GPU did work; the size fitted."
    assert summarise(used(40, 12000), None, offered)["advice"] == "Your GPU did work; the size fitted."
    assert summarise(used(20, 12000), None, Allocation(1, 8, 49152))["advice"] == "Your GPU did work; the size fitted."
    # a share's own session: counted as its fraction, and said as a share
    share = summarise(used(20, 12000), None, Allocation(0.25, 2, 12288, per_gpu=4))
    assert (share["gpus_given"], share["advice"]) == (0.25, "Your share of a GPU did work; the size fitted.")
    idle = summarise(_idle_tally(), None, Allocation(0.25, 2, 12288, 4))
    assert idle["advice"] == "Your GPU did no work; next time ask for 0 GPUs, or check that your code uses CUDA."


def _idle_tally():
    from spawner.usage import GpuTally, UsageTally

    gpu = GpuTally(0, 10, 0, 0, 0, 300, 81920)
    return UsageTally(gpus=[gpu], samples=10, idle_samples=10, cpu_seconds=60, memory_peak_mib=1024, seconds=3600)


def test_one_gpu_asked_where_the_partition_has_shares_has_a_share_among_its_alternatives(slurm):
    from spawner.hub.slurm.alternatives import candidates, difference, options_of

    shards = partition_shards(parse_sinfo(SINFO))
    asked = SessionRequest("sxm2", 1, 8.0)
    found = candidates(asked, slurm, {"sxm2": {"a100", "v100"}}, shards)
    share = SessionRequest("sxm2", 0, 8.0, shards=1)
    assert share in found and difference(asked, share, slurm) == "a quarter of a GPU"
    assert options_of(share) == {"partition": "sxm2", "gpus": "0", "hours": "8", "shards": "1"}
    # two GPUs asked, or a partition without shares: no share offered instead
    assert not [r for r in candidates(SessionRequest("sxm2", 2, 8.0), slurm, {}, shards) if r.shards]
    assert not [r for r in candidates(asked, slurm, {}, {"sxm2": 0}) if r.shards]


def test_a_mig_profile_is_a_gpu_type_with_its_label_and_memory_and_no_more_slices_than_a_node_has(slurm):
    from spawner.hub.request.options import SlurmFacts, parse_with
    from spawner.hub.slurm.clusterinfo import partition_gpu_types, partition_type_most

    mig = slurm.model_copy(
        update={
            "gpu_types": {**slurm.gpu_types, "a100_1g.10gb": "A100 slice, 10 GB"},
            "gpu_memory": {"a100_1g.10gb": "10G"},
        }
    )
    nodes = parse_sinfo(
        SINFO + "node004|sxm2*|mix|gpu:a100_1g.10gb:7(S:0)|gpu:a100_1g.10gb:2(IDX:0-1)|16/24/0/40|98304|393216|\n"
    )
    known = SlurmFacts(partition_gpu_types(nodes), most=partition_type_most(nodes))
    asked = parse_with({"gpus": 2, "gpu_type": "a100_1g.10gb"}, mig, known)
    assert resources_for(asked, mig).summary().startswith("2 GPUs (A100 slice, 10 GB) · 16 cores")
    sxm2 = availability(nodes, mig)["sxm2"]
    assert [(t.gpu_type, t.label, t.gpus_free, t.gpus_total, t.memory_gb) for t in sxm2.types] == [
        ("a100", "A100 80 GB", 2, 4, None),  # two of them in shards
        ("a100_1g.10gb", "A100 slice, 10 GB", 5, 7, 10.0),
        ("v100", "V100 32 GB", 3, 4, None),
    ]
    assert sxm2.types[1].words() == "A100 slice, 10 GB (10 GB GPU memory): 5 of 7 free, largest block 3"
    mig_many = mig.model_copy(
        update={"partitions": [mig.partitions[0].model_copy(update={"max_gpus": 8}), mig.partitions[1]]}
    )
    with pytest.raises(OptionsError) as refused:
        parse_with({"gpus": 8, "gpu_type": "a100_1g.10gb"}, mig_many, known)
    assert str(refused.value) == (
        "gpus: the nodes of partition sxm2 have at most 7 GPU(s) of type A100 slice, 10 GB; ask for 7 or fewer, "
        "or for another type."
    )


def test_a_shares_card_says_what_it_holds_and_the_metrics_count_its_fraction(slurm):
    from datetime import datetime

    from spawner.hub.base.metrics import session_counts
    from spawner.hub.clock.extension import Limits
    from spawner.hub.home.dashboard import session_card

    res = resources_for(SessionRequest("sxm2", 0, 1.0, shards=2), slurm)
    card = session_card(
        "42",
        None,
        res,
        start_done=True,
        stopping=False,
        message="",
        minutes=60,
        limits=Limits(),
        now=datetime.now(),
    )
    assert (card["gpus"], card["shards"], card["share"], card["gpu_share"]) == (0, 2, "half a GPU", 0.5)
    assert card["summary"] == "half a GPU · 4 cores · 24 GB RAM · 1 h on sxm2"
    whole = {"state": "running", "partition": "sxm2", "gpus": 2}
    assert session_counts([card, whole])[1] == {"sxm2": 2.5}


def test_no_share_where_the_admin_offers_no_gpu_even_on_nodes_with_shards(slurm):
    """A partition the admin made CPU-only (max_gpus 0) over nodes that have shards: the form shows none there and
    a start asking for one is refused (the hostile review's first finding: 3 shards were accepted there)."""
    cpu_on_a100s = slurm.model_copy(
        update={"partitions": [*slurm.partitions, slurm.partitions[1].model_copy(update={"name": "all"})]}
    )
    nodes = parse_sinfo(SINFO + SINFO.splitlines()[1].replace("|sxm2*|", "|all|") + "\n")
    assert partition_shards(nodes)["all"] == 16
    with pytest.raises(OptionsError, match="partition all has no GPUs shared in 3 shard"):
        parse_options({"partition": "all", "shards": 3}, cpu_on_a100s, shards=partition_shards(nodes))
    assert availability(nodes, cpu_on_a100s)["all"].shards_total == 0


@pytest.mark.parametrize("value", [0, "0", " 0", "00", "", None])
def test_no_share_asked_in_any_spelling_of_zero(slurm, value):
    assert parse_options({"gpus": 1, "shards": value}, slurm).shards == 0


@pytest.mark.parametrize("value", [False, 0.0, 1.0, "1e3", "-1", [1, 2]])
def test_a_share_count_that_is_no_whole_number_is_refused(slurm, value):
    with pytest.raises(OptionsError):
        parse_options({"gpus": 0, "shards": value}, slurm)


def test_a_session_that_ran_on_shares_keeps_them_and_holds_at_least_their_fraction_after_the_admin_changed(slurm):
    """After a hub restart the options are read again under today's admin file: shares the admin stopped offering
    are still what the job holds, counted as a whole GPU where no count of shares says otherwise."""
    none_now = slurm.model_copy(update={"shards": slurm.shards.model_copy(update={"per_gpu": 0})})
    saved = parse_options({"gpus": 0, "shards": 3}, none_now, saved=True)
    assert saved.shards == 3 and resources_for(saved, none_now).gpu_share == 1.0
    with pytest.raises(OptionsError, match="this portal offers no shares"):
        parse_options({"gpus": 0, "shards": 3}, none_now)  # a new start is refused


def test_a_run_and_a_sweeps_tasks_may_ask_for_shares_and_count_as_their_fraction(a_config_file, slurm):
    from spawner.hub.runs.jobscript import run_job, shape_of
    from spawner.hub.runs.limits import sweep_gpus, task_gpus
    from spawner.hub.runs.request import parse_run

    settings = load_config(a_config_file)  # the slurm fixture wrote the shares into it
    shards = partition_shards(parse_sinfo(SINFO))
    request = parse_run({"path": "work/train.ipynb", "gpus": 0, "shards": 1, "hours": 1}, settings, shards=shards)
    assert (request.gpus, request.shards, request.settings()["shards"]) == (0, 1, 1)
    assert shape_of(request, settings).summary() == "a quarter of a GPU · 2 cores · 12 GB RAM · 1 h on sxm2"
    argv = sbatch_argv(settings.slurm, run_job(settings, request, Account("alice", "/home/alice")))
    assert "--gres=shard:1" in argv and "--cpus-per-task=2" in argv and "--mem=12G" in argv
    # many small tasks on one GPU: a sweep of 12 tasks, 4 at once, each a quarter, holds one GPU against the cap
    per_task = task_gpus(request.settings(), 4)
    assert (per_task, sweep_gpus(per_task, 12, 4)) == (0.25, 1.0)
    assert (
        task_gpus({"gpus": 2, "nodes": 2}, 4) == 4 and "shards" not in parse_run({"path": "a.py"}, settings).settings()
    )
    for options, words in (
        ({"shards": 1, "nodes": 2, "partition": "sxm2"}, "shards: a run on shares of a GPU runs on one node"),
        ({"shards": 1, "partition": "cpu"}, "shards: partition cpu has no GPUs shared in 1 shard(s) or more"),
        ({"shards": 1, "gpus": 1}, "shards: 1 share(s) of a GPU asked together with 1 whole GPU(s)"),
    ):
        with pytest.raises(OptionsError) as refused:
            parse_run({"path": "work/train.ipynb", **options}, settings, shards=shards)
        assert str(refused.value).startswith(words), str(refused.value)


def test_slurm_24_prints_each_gpus_shards_and_untyped_gpus_with_files_print_a_null_type(slurm):
    """Since Slurm 23.11 GresUsed gives each GPU's shards held of its own ('shard:a100:3(2/4,1/4,0/4,0/4)') and no
    IDX; up to 25.11 untyped GPUs with device files print 'gpu:(null):4(IDX:0-3)' (the second review's finds: the
    first read no shard's GPU, the second no GPU in use)."""
    from spawner.hub.slurm.clusterinfo import free_gpus, free_shards, shard_block

    head = "node002|sxm2*|mix|gpu:a100:4(S:0-1),shard:a100:16(S:0-1)|"
    one = parse_sinfo(head + "gpu:a100:0(IDX:N/A),shard:a100:3(2/4,1/4,0/4,0/4)|6/34/0/40|36864|393216|\n")[0]
    assert (one.gpus_sharded, one.shards_used, one.shards_free_per_gpu) == ((0, 1), 3, (2, 3, 4, 4))
    assert (free_gpus(one), free_gpus(one, "a100"), free_shards(one), shard_block(one)) == (2, 2, 13, 4)
    # three GPUs held whole (Slurm prints them 0/4, or -/4 in later releases) and GPU 0 with 3 of 4 shards held
    full = parse_sinfo(head + "gpu:a100:3(IDX:1-3),shard:a100:3(3/4,0/4,-/4,0/4)|30/10/0/40|184320|393216|\n")[0]
    assert (full.gpus_held, full.gpus_sharded) == ((1, 2, 3), (0,))
    assert (free_gpus(full), free_shards(full), shard_block(full)) == (0, 1, 1)
    assert starts_now([full], "sxm2", 0, slurm, shards=1) and not starts_now([full], "sxm2", 0, slurm, shards=2)
    untyped = parse_sinfo("node009|sxm2*|mix|gpu:(null):4(S:0-1)|gpu:(null):3(IDX:0-2)|24/16/0/40|147456|393216|\n")[0]
    assert (untyped.gpus, untyped.gpus_used, untyped.gpu_types, untyped.gpus_held) == (4, 3, (("", 4, 3),), (0, 1, 2))
    assert free_gpus(untyped) == 1
    # what only Slurm writes, odd or not, reads without an error (an error here would break the form for everyone)
    odd = parse_sinfo("node010|sxm2*|mix|gpu:a100:2|gpu:a100:1(IDX:²),shard:a100:1(x/y)|0/40/0/40|0|393216|\n")[0]
    assert (odd.gpus_held, odd.gpus_sharded) == ((), ())


def test_the_run_dialog_offers_each_share_of_a_gpu_below_a_whole_one():
    from spawner.hub.runs.service import share_options

    assert share_options(4) == [
        {"name": "1", "label": "a quarter of a GPU"},
        {"name": "2", "label": "half a GPU"},
        {"name": "3", "label": "3 quarters of a GPU"},
    ]
    assert share_options(1) == [] and share_options(0) == []  # no shares offered
