"""What a session used: the tally, its checks, the summary and its advice (spawner/usage.py), the session's
sampler (spawner/jupyter/usage/sampler.py) and Slurm's accounting of it (spawner/slurmaccounting.py)."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from spawner.hub.usage.userusage import gpu_hours_between, split_gpu_hours
from spawner.jupyter.session.activity import GpuWatch
from spawner.jupyter.usage.sampler import UsageSampler
from spawner.slurmaccounting import UsedJob, cpu_seconds, parse_usage, size_mib, tres, usage_argv
from spawner.usage import Allocation, GpuTally, JobUse, UsageTally, summarise
from tests.unit.test_idle import RecordedNvml

TWO_GPUS = Allocation(gpus=2, cpus=16, memory_mib=98304)
ONE_GPU = Allocation(gpus=1, cpus=8, memory_mib=49152)
FOUR_CORES = Allocation(gpus=0, cpus=4, memory_mib=16384)
A_JOB = JobUse(cpu_seconds=60, cpus=4, elapsed_seconds=600, memory_peak_mib=1000, memory_mib=16384, gpus=0)
NO_GPU = "next time ask for 0 GPUs, or check that your code uses CUDA."


def tally(*gpus: GpuTally, samples=10, idle=2, cpu=3600.0, memory=8192, seconds=3600.0) -> UsageTally:
    return UsageTally(
        gpus=list(gpus), samples=samples, idle_samples=idle, cpu_seconds=cpu, memory_peak_mib=memory, seconds=seconds
    )


def test_a_gpu_tally_keeps_mean_peak_and_whether_it_worked():
    gpu = GpuTally(index=1)
    for utilization, memory in [(0, 300), (80, 4000), (100, 6000), (0, 5000)]:
        gpu.add(utilization, memory, 32768)
    assert gpu == GpuTally(1, 4, 2, 180, 100, 6000, 32768)
    assert (gpu.mean, gpu.worked) == (45.0, True)
    idle = GpuTally(index=0)
    for _ in range(30):
        idle.add(0, 300, 32768)
    assert not idle.worked


def test_a_gpu_that_reports_power_tallies_the_energy_it_drew_and_the_summary_says_it():
    gpu = GpuTally(index=0)
    for counter in (5_000_000, 5_000_000 + 1_800_000, 5_000_000 + 3_600_000, 100):  # mJ; the last: a driver reload
        gpu.add(50, 4000, 32768, counter)
    assert (gpu.energy_j, gpu.energy_counter_mj) == (3600.0, 100)  # 3.6 kJ = 1 Wh; the reload added nothing
    silent = GpuTally(index=1)
    silent.add(0, 300, 32768, None)  # NVML has no power reading for it
    summary = summarise(tally(gpu, silent), None, TWO_GPUS)
    assert [g["energy_wh"] for g in summary["gpus"]] == [1.0, None]
    assert summary["gpu_energy_wh"] == 1.0
    assert "GPU energy: 1.0 Wh (NVML)" in summary["lines"]
    assert summarise(tally(silent), None, ONE_GPU)["gpu_energy_wh"] is None  # and no line about it
    assert UsageTally.from_dict(tally(gpu).to_dict()) == tally(gpu)
    with pytest.raises(ValueError):
        UsageTally.from_dict({**tally(gpu).to_dict(), "gpus": [{**gpu.__dict__, "energy_j": -1}]})
    with pytest.raises(ValueError):  # 2 kW for the whole hour and more: no GPU draws that
        UsageTally.from_dict({**tally(gpu).to_dict(), "gpus": [{**gpu.__dict__, "energy_j": 2000 * 3600 + 1}]})


def test_one_of_two_gpus_that_did_work_gets_that_advice():
    busy = GpuTally(
        1,
        samples=10,
        busy_samples=9,
        utilization_sum=720,
        utilization_peak=95,
        memory_peak_mib=4000,
        memory_total_mib=32768,
    )
    idle = GpuTally(0, samples=10, memory_peak_mib=300, memory_total_mib=32768)
    summary = summarise(tally(idle, busy), None, TWO_GPUS)
    assert summary["advice"] == "1 of 2 GPUs did work; next time ask for 1."
    assert summary["lines"] == [
        "GPU 0: 0% on average, peak 0%, memory peak 0.3 GB of 32.0 GB",
        "GPU 1: 72% on average, peak 95%, memory peak 3.9 GB of 32.0 GB",
        "CPU: 6% of 16 cores over 1.0 h",
        "Memory: peak 8.0 GB of 96.0 GB (8%)",
        "Idle: 20% of the time",
        "1 of 2 GPUs did work; next time ask for 1.",
    ]
    assert (summary["source"], summary["gpus_worked"], summary["cpu_efficiency"]) == ("session", 1, 6)


def test_slurms_numbers_win_for_cpu_and_memory_and_the_advice_follows_them():
    busy = GpuTally(0, samples=10, busy_samples=10, utilization_sum=900, utilization_peak=99, memory_total_mib=32768)
    job = JobUse(cpu_seconds=7200, cpus=8, elapsed_seconds=3600, memory_peak_mib=47000, memory_mib=49152, gpus=1)
    summary = summarise(tally(busy), job, Allocation(gpus=1, cpus=8, memory_mib=49152))
    assert summary["source"] == "slurm"
    assert (summary["cpu_efficiency"], summary["memory_share"]) == (25, 96)
    assert summary["advice"] == (
        "Memory peaked at 45.9 GB of 48.0 GB; ask for one more GPU (it brings more memory) or load less data at once."
    )


@pytest.mark.parametrize(
    "gpus, given, cpu, advice",
    [
        ([GpuTally(0, samples=10, memory_total_mib=1)], 1, 3600.0, "Your GPU did no work; next time ask for 0 GPUs"),
        ([GpuTally(0, samples=10), GpuTally(1, samples=10)], 2, 3600.0, "None of your 2 GPUs did work"),
        ([], 0, 100.0, "Your 4 cores were 1% busy; a shorter session would have done."),
        ([], 0, 14400.0, "The session's size fitted its work."),
        (
            [GpuTally(0, samples=4, busy_samples=4, utilization_sum=400)],
            1,
            3600.0,
            "Your GPU did work; the size fitted.",
        ),
    ],
)
def test_the_advice_of_other_sessions(gpus, given, cpu, advice):
    summary = summarise(tally(*gpus, cpu=cpu), None, Allocation(gpus=given, cpus=4, memory_mib=16384))
    assert summary["advice"].startswith(advice)


TOO_SHORT = "Too short to judge the session's size ({} of the 2 readings it takes)."


@pytest.mark.parametrize(
    "summary_of, advice",
    [
        # one GPU read once, nothing tallied between two readings yet (CI's "fitted its work" for an idle GPU)
        (lambda: summarise(tally(GpuTally(0, samples=1), samples=0, idle=0), None, ONE_GPU), TOO_SHORT.format(0)),
        (lambda: summarise(tally(GpuTally(0, samples=2), samples=1, idle=0), None, ONE_GPU), TOO_SHORT.format(1)),
        (lambda: summarise(tally(GpuTally(0, samples=3), samples=2), None, ONE_GPU), "Your GPU did no work; " + NO_GPU),
        # Slurm's numbers say nothing of GPUs: a GPU session that never reported cannot be judged either
        (lambda: summarise(None, A_JOB, ONE_GPU), TOO_SHORT.format(0)),
        # a CPU-only session is judged by Slurm's numbers, by its own tally only once it holds enough
        (lambda: summarise(None, A_JOB, FOUR_CORES), "Your 4 cores were 2% busy; a shorter session would have done."),
        (lambda: summarise(tally(samples=1, idle=0, cpu=10.0), None, FOUR_CORES), TOO_SHORT.format(1)),
        # GPUs given, enough readings, but NVML read none of them: neither "did no work" nor "did work"
        (
            lambda: summarise(tally(samples=5), None, ONE_GPU),
            "Its GPUs could not be read (the session's log says why), so their size cannot be judged.",
        ),
        # memory near its limit is Slurm's fact, however short the tally
        (
            lambda: summarise(None, JobUse(10, 8, 60, 47000, 49152, 1), ONE_GPU),
            "Memory peaked at 45.9 GB of 48.0 GB; ask for one more GPU (it brings more memory) or load less data at "
            "once.",
        ),
    ],
    ids=[
        "gpu-read-once",
        "gpu-one-sample",
        "gpu-enough",
        "gpu-slurm-only",
        "cpu-slurm",
        "cpu-tally-short",
        "gpus-unread",
        "memory-near-limit",
    ],
)
def test_the_advice_says_when_too_few_readings_can_judge(summary_of, advice):
    assert summary_of()["advice"] == advice


def test_the_sampler_just_started_says_it_is_too_short_to_judge():
    nvml = RecordedNvml([{"uuid": "GPU-a", "util": 0, "used": 300 << 20, "pids": []}])
    sampler = UsageSampler(GpuWatch(nvml, ["0"]), iter([(1.0, 10), (1.5, 10), (2.0, 10)]).__next__, ONE_GPU, None)
    sampler.sample(0.0)  # the first reading: the GPU idle, but nothing to judge by yet
    assert sampler.summary()["advice"] == TOO_SHORT.format(0)
    for now in (5.0, 10.0):
        sampler.gpus.read_at = -1e9
        sampler.sample(now)
    assert sampler.summary()["advice"] == "Your GPU did no work; " + NO_GPU


def test_a_session_without_gpus_shows_cpu_and_memory_only():
    summary = summarise(tally(cpu=7200.0), None, Allocation(gpus=0, cpus=4, memory_mib=16384))
    assert summary["gpus"] == []
    assert not any(line.startswith("GPU") for line in summary["lines"])
    assert summary["lines"][:2] == ["CPU: 50% of 4 cores over 1.0 h", "Memory: peak 8.0 GB of 16.0 GB (50%)"]


def test_no_report_and_no_accounting_says_so():
    assert summarise(None, None, TWO_GPUS) == {
        "source": "none",
        "advice": "",
        "lines": ["No usage was recorded for this session."],
    }


def test_a_report_round_trips_and_a_bad_one_is_refused_in_words():
    report = tally(GpuTally(0, 3, 1, 50, 50, 100, 200)).to_dict()
    assert UsageTally.from_dict(report) == tally(GpuTally(0, 3, 1, 50, 50, 100, 200))
    for bad, words in [
        ("nonsense", "an object"),
        ({**report, "extra": 1}, "an object"),
        ({**report, "samples": -1}, "samples must be a whole number"),
        ({**report, "samples": True}, "samples must be a whole number"),
        ({**report, "idle_samples": 11}, "idle_samples cannot exceed samples"),
        ({**report, "cpu_seconds": "1"}, "cpu_seconds must be a number"),
        ({**report, "gpus": [{"index": 0, "samples": 1, "busy_samples": 2}]}, "cannot exceed its samples"),
        ({**report, "gpus": [{"index": 0, "samples": 1, "utilization_sum": 101}]}, "cannot exceed its samples"),
        ({**report, "gpus": [{"index": 0}] * 65}, "at most 64"),
        ({**report, "gpus": [{"index": 0, "rm -rf": 1}]}, "each GPU tally"),
    ]:
        with pytest.raises(ValueError, match=words):
            UsageTally.from_dict(bad)


def test_the_sampler_tallies_the_jobs_gpus_cpu_and_memory():
    nvml = RecordedNvml(
        [
            {"uuid": "GPU-a", "util": 0, "used": 300 << 20, "pids": []},
            {"uuid": "GPU-b", "util": 80, "used": 4000 << 20, "pids": [1]},
        ]
    )
    watch = GpuWatch(nvml, ["0", "1"])
    cpu = iter([(10.0, 500), (10.05, 700), (70.0, 600)])
    sampler = UsageSampler(watch, lambda: next(cpu), TWO_GPUS, report=None)
    for now, utilization in [(0.0, 80), (10.0, 0), (20.0, 80)]:
        nvml.gpus[1]["util"] = utilization
        watch.read_at = -1e9  # a fresh NVML reading each time (the watch reuses one for 5 s)
        sampler.sample(now)
    assert sampler.tally == UsageTally(
        gpus=[GpuTally(0, 3, 0, 0, 0, 300, 32768), GpuTally(1, 3, 2, 160, 80, 4000, 32768)],
        samples=2,
        idle_samples=1,  # from 0 s to 10 s: no GPU busy at 10 s and 0.05 CPU seconds
        cpu_seconds=60.0,  # since the first sample, as the seconds are: not the server's start-up
        memory_peak_mib=700,
        seconds=20.0,
    )
    assert sampler.summary()["advice"] == "1 of 2 GPUs did work; next time ask for 1."


class PoweredNvml(RecordedNvml):
    """The same, on GPUs that report their energy (Volta and later): a counter in mJ."""

    def nvmlDeviceGetTotalEnergyConsumption(self, gpu):
        return gpu["energy_mj"]


def test_the_sampler_tallies_the_energy_gpus_report():
    nvml = PoweredNvml([{"uuid": "GPU-a", "util": 90, "used": 4000 << 20, "pids": [1], "energy_mj": 10**9}])
    watch = GpuWatch(nvml, ["0"])
    sampler = UsageSampler(watch, iter([(1.0, 10), (50.0, 10), (99.0, 10)]).__next__, ONE_GPU, report=None)
    for now, drawn_mj in [(0.0, 0), (60.0, 15_000_000), (120.0, 30_000_000)]:  # 250 W for two minutes
        nvml.gpus[0]["energy_mj"] = 10**9 + drawn_mj
        watch.read_at = -1e9
        sampler.sample(now)
    assert sampler.tally.gpus[0].energy_j == 30_000.0
    assert sampler.summary()["gpu_energy_wh"] == 8.333


def test_a_sample_without_gpu_work_and_under_a_tenth_of_a_core_is_idle():
    sampler = UsageSampler(GpuWatch(None, []), iter([(1.0, 10), (1.5, 10), (9.0, 10)]).__next__, TWO_GPUS, None)
    for now in (0.0, 10.0, 20.0):
        sampler.sample(now)
    assert (sampler.tally.samples, sampler.tally.idle_samples) == (2, 1)


SACCT = """\
101|alice|sxm2|CANCELLED by 1001|2026-11-24T03:39:22|2026-11-24T03:41:36|134|00:02.978|billing=8,cpu=8,gres/gpu=2,gres/gpu:a100=2,gres/gpu:v100=0,mem=48G,node=1||nlp
101.batch||||2026-11-24T03:39:22|2026-11-24T03:41:36|134|00:02.978|cpu=8,gres/gpu=2,mem=48G,node=1|149820K|nlp
101.extern||||2026-11-24T03:39:22|2026-11-24T03:41:36|134|00:00:00|billing=8,cpu=8,mem=48G,node=1|0|nlp
102|bob|debug,sxm2|RUNNING|2026-11-24T03:41:39|Unknown|34|1-02:03:04.5|billing=4,cpu=4,mem=16G,node=1||vision
not|a|line
103.0||||2026-11-24T03:41:39|Unknown|34|00:01|cpu=4|1.5G|vision
"""


def test_sacct_usage_reads_into_one_job_each_with_its_steps_peak_memory():
    assert usage_argv("sacct", 31) == [
        "sacct",
        "--allusers",
        "--noheader",
        "--parsable2",
        "--starttime=now-31days",
        "--format=JobID,User,Partition,State,Start,End,ElapsedRaw,TotalCPU,AllocTRES,MaxRSS,Account",
    ]
    assert parse_usage(SACCT) == [
        UsedJob(
            "101",
            "alice",
            "sxm2",
            "CANCELLED",
            "2026-11-24T03:39:22",
            "2026-11-24T03:41:36",
            134,
            2.978,
            8,
            2,
            49152,
            146,
            account="nlp",
            gpu_type="a100",
        ),
        UsedJob(
            "102", "bob", "debug", "RUNNING", "2026-11-24T03:41:39", "", 34, 93784.5, 4, 0, 16384, 0, account="vision"
        ),
    ]
    job = parse_usage(SACCT)[0]
    assert (round(job.gpu_hours, 4), job.cpu_efficiency) == (0.0744, 0)
    assert job.use() == JobUse(2.978, 8, 134, 146, 49152, 2)


def test_sacct_numbers_read_as_slurm_writes_them():
    assert [cpu_seconds(t) for t in ["00:02.978", "01:02:03", "2-00:00:01", "", "junk"]] == [2.978, 3723, 172801, 0, 0]
    assert [size_mib(t) for t in ["149820K", "48G", "1.5T", "0", "1048576", ""]] == [146, 49152, 1572864, 0, 1, 0]
    assert tres("billing=8,cpu=8,gres/gpu=1,mem=48G,node=1") == {
        "billing": "8",
        "cpu": "8",
        "gres/gpu": "1",
        "mem": "48G",
        "node": "1",
    }


def test_durations_and_a_short_jobs_memory_read_as_people_say_them():
    from spawner.usage import duration

    assert [duration(h) for h in (0.005, 0.75, 2.46)] == ["under 1 min", "45 min", "2.5 h"]
    short = JobUse(cpu_seconds=2, cpus=4, elapsed_seconds=20, memory_peak_mib=0, memory_mib=16384, gpus=0)
    summary = summarise(tally(memory=512), short, Allocation(gpus=0, cpus=4, memory_mib=16384))
    assert summary["memory_peak_mib"] == 512  # Slurm sampled no memory in 20 s: the session's own peak stands


SHARE_SACCT = (
    "201|carol|sxm2|COMPLETED|2026-11-24T03:00:00|2026-11-24T05:00:00|7200|00:10:00|"
    "billing=2,cpu=2,gres/shard=2,mem=12G,node=1||nlp\n"
)


def test_a_share_of_a_gpu_counts_its_fraction_of_the_gpu_hours_where_the_portal_offers_shares():
    share = parse_usage(SHARE_SACCT, shards_per_gpu=4)[0]
    assert (share.gpus, share.shards, share.gpu_share, share.gpu_hours) == (0, 2, 0.5, 1.0)
    now = datetime.fromisoformat("2026-11-25T00:00:00")
    assert gpu_hours_between([share], now - timedelta(days=7), now) == 1.0
    assert split_gpu_hours([share], now) == [{"account": "nlp", "gpu_type": "GPUs", "week": 1.0, "month": 1.0}]
    # a portal that says no fraction counts a share as a whole GPU, as the GPU cap does (slurmgres.gpu_fraction)
    assert parse_usage(SHARE_SACCT)[0].gpu_hours == 2.0
