"""The limits Slurm holds a session's time to (spawner/slurmlimits.py): Slurm's answers read by equality, and the
order in which its MaxWall and GrpTRESMins hold."""

from __future__ import annotations

import pytest

from spawner.root.extend import REFUSED, Refused, check_limits
from spawner.slurmlimits import (
    Charged,
    Group,
    JobCharge,
    assoc_mgr_argv,
    charged_to,
    job_charge_argv,
    max_wall,
    parse_assoc_mgr,
    parse_job_charge,
    parse_partition_qos,
    parse_qos_flags,
    qos_flags_argv,
    qos_mgr_argv,
    tres_minutes_refusal,
)
from spawner.slurmvocab import Job, UnreadableAnswer

# `scontrol --oneliner show assoc_mgr flags=assoc users=dave accounts=...` and `flags=qos` (Slurm 22.05): root > vision > dave; nlp with an allocation
ASSOC_MGR = (
    "Current Association Manager state\n\nAssociation Records\n\n"
    "ClusterName=dev Account=root UserName= Partition= Priority=0 ID=1 SharesRaw/Norm/Level/Factor=1/0.00/2/0.00 "
    "UsageRaw/Norm/Efctv=0.00/0.00/0.00 ParentAccount= Lft=1 DefAssoc=No GrpJobs=N(0) GrpJobsAccrue=N(0) "
    "GrpSubmitJobs=N(0) GrpWall=N(0.00) GrpTRES=cpu=N(0),mem=N(0),gres/gpu=N(0) "
    "GrpTRESMins=cpu=N(0),mem=N(0),gres/gpu=N(0) GrpTRESRunMins=cpu=N(0),mem=N(0),gres/gpu=N(0) MaxJobs= "
    "MaxJobsAccrue= MaxSubmitJobs= MaxWallPJ= MaxTRESPJ= MaxTRESPN= MaxTRESMinsPJ= MinPrioThresh=\n"
    "ClusterName=dev Account=vision UserName= Partition= Priority=0 ID=2 SharesRaw/Norm/Level/Factor=60/0.60/60/0.00 "
    "UsageRaw/Norm/Efctv=0.00/0.00/0.00 ParentAccount=root(1) Lft=2 DefAssoc=No GrpJobs=N(1) GrpJobsAccrue=N(0) "
    "GrpSubmitJobs=N(1) GrpWall=N(3.00) GrpTRES=cpu=N(2),mem=N(4096),gres/gpu=N(1) "
    "GrpTRESMins=cpu=N(6),mem=N(12288),gres/gpu=600(3) GrpTRESRunMins=cpu=N(114),mem=N(0),gres/gpu=N(57) "
    "MaxJobs= MaxJobsAccrue= MaxSubmitJobs= MaxWallPJ=180 MaxTRESPJ= MaxTRESPN= MaxTRESMinsPJ= MinPrioThresh=\n"
    "ClusterName=dev Account=vision UserName=dave(1004) Partition= Priority=0 ID=7 "
    "SharesRaw/Norm/Level/Factor=1/0.20/5/0.00 UsageRaw/Norm/Efctv=0.00/0.00/0.00 ParentAccount= Lft=3 "
    "DefAssoc=Yes GrpJobs=N(1) GrpJobsAccrue=N(0) GrpSubmitJobs=N(1) GrpWall=N(3.00) "
    "GrpTRES=cpu=N(2),mem=N(4096),gres/gpu=N(1) GrpTRESMins=cpu=N(6),mem=N(12288),gres/gpu=N(3) "
    "GrpTRESRunMins=cpu=N(114),mem=N(0),gres/gpu=N(57) MaxJobs= MaxJobsAccrue= MaxSubmitJobs= MaxWallPJ=60 "
    "MaxTRESPJ= MaxTRESPN= MaxTRESMinsPJ= MinPrioThresh=\n"
    "\nQOS Records\n\n"
    "QOS=normal(1) UsageRaw=0.000000 GrpJobs=N(1) GrpJobsAccrue=N(0) GrpSubmitJobs=N(1) GrpWall=N(3.00) "
    "GrpTRES=cpu=N(2),gres/gpu=N(1) GrpTRESMins=cpu=N(6),gres/gpu=N(3) GrpTRESRunMins=cpu=N(114),gres/gpu=N(57) "
    "MaxWallPJ= MaxTRESPJ= MaxTRESPN= MaxTRESPU= MaxTRESPA= MaxTRESMinsPJ= MinPrioThresh= MinTRESPJ=\n"
    "QOS=short(2) UsageRaw=0.000000 GrpJobs=N(0) GrpJobsAccrue=N(0) GrpSubmitJobs=N(0) GrpWall=N(0.00) "
    "GrpTRES=cpu=N(0),gres/gpu=N(0) GrpTRESMins=cpu=N(0),gres/gpu=N(0) GrpTRESRunMins=cpu=N(0),gres/gpu=N(0) "
    "MaxWallPJ=60 MaxTRESPJ= MaxTRESPN= MaxTRESPU= MaxTRESPA= MaxTRESMinsPJ= MinPrioThresh= MinTRESPJ=\n"
)
ROOT, VISION = Group(), Group(180, {"gres/gpu": (600, 3)}, "root")
DAVE = Group(60)
ASSOCIATIONS = {("root", "", ""): ROOT, ("vision", "", ""): VISION, ("vision", "dave", ""): DAVE}
QOS = {"normal": Group(), "short": Group(60)}
ONE_GPU = JobCharge("normal", "vision", {"cpu": 2, "node": 1, "billing": 2, "gres/gpu": 1})


def test_the_questions():
    assert job_charge_argv("squeue", "12") == [
        "squeue",
        "--noheader",
        "--jobs=12",
        "--Format=QOS:|,Account:|,tres-alloc:|",
    ]
    assert assoc_mgr_argv("scontrol", "dave", "vision")[2:] == [
        "show",
        "assoc_mgr",
        "flags=assoc",
        "users=dave",
        "accounts=vision",
    ]
    assert qos_mgr_argv("scontrol", ["normal", "gpuqos"])[-2:] == ["flags=qos", "qos=normal,gpuqos"]
    assert qos_flags_argv("sacctmgr") == ["sacctmgr", "--noheader", "--parsable2", "show", "qos", "format=Name,Flags"]


def test_slurms_answers_read():
    assert parse_assoc_mgr(ASSOC_MGR) == (ASSOCIATIONS, QOS)
    assert parse_job_charge("normal|vision|cpu=2,mem=4G,node=1,billing=2,gres/gpu=1|\n") == ONE_GPU
    assert parse_partition_qos("PartitionName=sxm2 AllowGroups=ALL QOS=gpuqos DefaultTime=01:00:00") == "gpuqos"
    assert parse_partition_qos("PartitionName=sxm2 AllowQos=ALL AllocNodes=ALL Default=YES QoS=N/A") == ""
    assert parse_qos_flags("normal|\nlong|DenyOnLimit,OverPartQOS\n") == {
        "normal": frozenset(),
        "long": frozenset({"DenyOnLimit", "OverPartQOS"}),
    }


@pytest.mark.parametrize(
    "unreadable",
    [
        lambda: parse_job_charge("normal|vision\nx|y|z|\n"),
        lambda: parse_job_charge("|vision|cpu=1|"),
        lambda: parse_partition_qos("PartitionName=sxm2 AllowQos=ALL MaxTime=12:00:00"),
        lambda: parse_qos_flags("normal\n"),
        lambda: parse_assoc_mgr("ClusterName=dev UserName=dave(1004)\n"),
    ],
)
def test_an_answer_that_does_not_read_is_refused(unreadable):
    with pytest.raises(UnreadableAnswer):
        unreadable()


def test_the_order_slurm_holds_a_job_to():
    charged = charged_to(ONE_GPU, "dave", "sxm2", "", ASSOCIATIONS, QOS, {})
    assert charged == [
        Charged("The session's QOS normal", Group()),
        Charged("Your Slurm association (user dave, account vision)", DAVE),
        Charged("Account vision, above your association,", VISION),
        Charged("Account root, above your association,", ROOT),
    ]
    # the partition's QOS first, unless the job's QOS says OverPartQOS; a partition association before the plain one
    qos = {**QOS, "gpuqos": Group(30)}
    assert [c.words for c in charged_to(ONE_GPU, "dave", "sxm2", "gpuqos", ASSOCIATIONS, qos, {})][:2] == [
        "Partition sxm2's QOS gpuqos",
        "The session's QOS normal",
    ]
    flags = {"normal": frozenset({"OverPartQOS"})}
    assert (
        charged_to(ONE_GPU, "dave", "sxm2", "gpuqos", ASSOCIATIONS, qos, flags)[0].words == "The session's QOS normal"
    )
    by_partition = {**ASSOCIATIONS, ("vision", "dave", "sxm2"): Group(20)}
    assert charged_to(ONE_GPU, "dave", "sxm2", "", by_partition, QOS, {})[1].group == Group(20)


@pytest.mark.parametrize(
    "associations, qos",
    [
        ({k: v for k, v in ASSOCIATIONS.items() if k[1] != "dave"}, QOS),  # the user's association not read
        ({k: v for k, v in ASSOCIATIONS.items() if k[0] != "root"}, QOS),  # a parent not read
        (ASSOCIATIONS, {"short": Group(60)}),  # the job's QOS not read
    ],
)
def test_a_limit_not_read_is_no_limit(associations, qos):
    with pytest.raises(UnreadableAnswer):
        charged_to(ONE_GPU, "dave", "sxm2", "", associations, qos, {})


def test_the_first_maxwall_set_holds():
    charged = charged_to(ONE_GPU, "dave", "sxm2", "", ASSOCIATIONS, QOS, {})
    assert max_wall(charged) == (
        60,
        "Your Slurm association (user dave, account vision) has a MaxWall of 01:00:00: at most 60 minutes per job.",
    )
    # set on the account only: the parent's holds (Slurm's users inherit it)
    inherited = {**ASSOCIATIONS, ("vision", "dave", ""): Group()}
    assert max_wall(charged_to(ONE_GPU, "dave", "sxm2", "", inherited, QOS, {})) == (
        180,
        "Account vision, above your association, has a MaxWall of 03:00:00: at most 180 minutes per job.",
    )
    # a QOS's MaxWall comes before the association's, as in Slurm (a long QOS lets a job pass an account's)
    long = JobCharge("long", "vision", {"cpu": 2})
    assert max_wall(charged_to(long, "dave", "sxm2", "", ASSOCIATIONS, {"long": Group(720)}, {}))[0] == 720
    assert max_wall([Charged("The session's QOS normal", Group())]) is None


def test_an_extension_fits_in_what_is_left_of_every_grptresmins():
    charged = charged_to(ONE_GPU, "dave", "sxm2", "", ASSOCIATIONS, QOS, {})
    assert tres_minutes_refusal(charged, ONE_GPU.tres, 597) is None  # 3 of 600 GPU-minutes used
    assert tres_minutes_refusal(charged, ONE_GPU.tres, 598) == (
        "Account vision, above your association, has 597 of its GrpTRESMins gres/gpu=600 left; "
        "598 more minutes of this session would take 598."
    )
    assert tres_minutes_refusal(charged, {"cpu": 4}, 10_000) is None  # no GPU, no GPU-minutes


def test_the_helper_holds_every_limit_with_its_words():
    dave = Job("dsportal", "dave", "RUNNING", 60, "sxm2")
    charged = charged_to(ONE_GPU, "dave", "sxm2", "", ASSOCIATIONS, QOS, {})
    with pytest.raises(Refused) as e:
        check_limits(dave, 120, 720, charged, ONE_GPU.tres)
    assert (e.value.status, str(e.value)) == (
        REFUSED,
        "Your Slurm association (user dave, account vision) has a MaxWall of 01:00:00: at most 60 minutes per job.",
    )
    with pytest.raises(Refused, match="Partition sxm2 allows at most 90 minutes per job."):
        check_limits(dave, 120, 90, [], ONE_GPU.tres)
    with pytest.raises(Refused, match="has 597 of its GrpTRESMins gres/gpu=600 left"):
        allocation = Group(tres_minutes={"gres/gpu": (600, 3)})
        check_limits(dave, 700, None, [Charged("Account vision, above your association,", allocation)], ONE_GPU.tres)
    assert check_limits(dave, 120, 720, [Charged("The session's QOS normal", Group())], ONE_GPU.tres) is None
