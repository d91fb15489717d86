"""The admin YAML's section sessions: the sessions' clock, history, presets, idle culling and per-user limits."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from .kinds import Flag, GroupName, Label, OptionalSlurmName, SlurmName, integer, number
from .section import Section, key, section


class Preset(Section):
    label: Label = key(help="The button's text on the home page, e.g. 1 GPU · 8 h.")
    partition: OptionalSlurmName = key("", "One of slurm.partitions; empty = the default partition.")
    gpus: integer(0, 16) = key(0, "GPUs (0 = a CPU-only session).")
    hours: number(0, 8760) = key(8, "Session length in hours.")
    gpu_type: OptionalSlurmName = key(
        "", "A GPU type of the partition (gres.conf Type=, e.g. a100); empty = any type, whichever is free first."
    )
    qos: OptionalSlurmName = key("", "One of slurm.qos_choices; empty = the default QOS.")


class ContinuationSettings(Section):
    enabled: Flag = key(
        True,
        "Users may continue a running session in a new Slurm job of the same shape (the home page's \"Continue "
        "in a new job\"): each open notebook's Python or R kernel's variables are carried into the same "
        "notebook's new kernel, and what cannot be carried is named.",
    )
    max_gb: number(0.01, 1024) = key(
        4, "What one kernel's variables may take on disk, in GB; a variable past it is named as not carried."
    )
    dump_seconds: integer(5, 1800) = key(
        120, "Seconds one kernel has to write its variables; what is not written by then is named as not carried."
    )
    keep_hours: number(1, 8760) = key(
        24,
        "Hours the variables a session carried out are kept in the user's home (~/.dsportal/continuation, "
        "0700) for the new session; they are deleted once loaded, or after this.",
    )


class SessionSettings(Section):
    warn_minutes: Annotated[list[integer(1, 1440)], Field(max_length=5)] = key(
        [15, 5], "Minutes before a session's time limit at which JupyterLab shows a notification."
    )
    save_minutes: integer(1, 60) = key(
        3,
        "Minutes before the time limit at which Slurm warns the session (sbatch --signal) and JupyterLab "
        "saves every open document with unsaved changes; it then saves them again every 20 s until the end. "
        "Slurm sends its warning up to a minute early.",
    )
    history: integer(0, 50) = key(5, "Past sessions listed on the home page, with when and why each ended.")
    presets: list[Preset] = key(
        [],
        "One-click sessions on the home page, above the form.",
        example=[
            {"label": "Quick CPU session · 2 h", "partition": "", "gpus": 0, "hours": 2},
            {"label": "1 GPU · 8 h", "partition": "", "gpus": 1, "hours": 8},
            {"label": "Full node · 4 GPUs", "partition": "sxm2", "gpus": 4, "hours": 8},
        ],
    )
    jupyterlab_news: Flag = key(
        False,
        "JupyterLab asks each user whether to fetch Jupyter's news from the internet; false = it never "
        "asks and fetches nothing (compute nodes often have no internet).",
    )
    idle_timeout: integer(0, 30 * 86400) = key(
        7200,
        "Seconds without use after which a session is stopped and its GPUs go back to Slurm (the hub runs "
        "jupyterhub-idle-culler); 0 = never. Use means a busy kernel, terminal traffic, the user's mouse or keys "
        "in JupyterLab, or work on the job's GPUs; an open but untouched browser tab is no use.",
    )
    idle_timeout_by_partition: dict[SlurmName, integer(0, 30 * 86400)] = key(
        {}, "Other idle timeouts for sessions of these partitions (seconds; 0 = never).", example={"sxm2": 14400}
    )
    idle_exempt_groups: list[GroupName] = key(
        [], "Unix groups whose members' sessions are never stopped for being idle."
    )
    cull_every: integer(10, 86400) = key(
        300, "Seconds between the idle culler's checks (a session stops at most this long after its timeout)."
    )
    activity_seconds: integer(10, 3600) = key(
        60,
        "Seconds between a session's reports of its last use to the hub; idle timeouts must be at least "
        "twice this, or a session in use could look idle.",
    )
    idle_warning_seconds: integer(10, 86400) = key(
        600,
        "Seconds before an idle session is stopped at which JupyterLab warns the user (at most half the "
        "session's idle timeout).",
    )
    max_per_user: integer(1, 20) = key(
        3,
        "Sessions one user may run at once, each its own Slurm job with its own name, partition, GPUs and hours "
        "(e.g. a CPU session for editing beside a GPU session for training).",
    )
    max_gpus_per_user: integer(0, 1024) = key(
        0,
        "GPUs one user may hold or queue at once through the portal, counting their sessions, runs and "
        "sweeps together (a run: its nodes × GPUs per node; a sweep: its tasks' GPUs × the tasks it may run "
        "at once); a session, run or sweep that would pass it is refused with words before anything is "
        "submitted. 0 = no limit beyond each partition's max_gpus. Runs and sweeps without GPUs, and jobs "
        "users submit with sbatch themselves, are bounded by Slurm's association and QOS limits only.",
    )
    max_kept_per_user: integer(1, 100) = key(
        10,
        "Named sessions one user may keep on the home page, running or stopped (JupyterHub's "
        "named_server_limit_per_user); a user removes a stopped one to name a new one.",
    )
    continuation: ContinuationSettings = section(
        ContinuationSettings, "Continuing a session in a new job, its kernels' variables carried."
    )
