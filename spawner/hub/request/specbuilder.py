"""The session spec a job gets from the admin config (pure; the node reads it, spawner/sessionspec.py)."""

from __future__ import annotations

from portal.settings import PortalSettings

from ...sessionspec import AppsSpec, ClockSpec, ContinuationSpec, IdleSpec, SessionSpec, TensorBoardSpec, UsageSpec


def build_session_spec(
    settings: PortalSettings, idle_timeout: int, partition: str, continue_from: str = ""
) -> SessionSpec:
    """What the session prepares on the node (storage links, kernels) and what its Jupyter server shows and
    allows (TensorBoards, the clock, the idle warning).  `idle_timeout`: this session's, in seconds (0 = never);
    `partition`: where it runs; `continue_from`: the job of the session it continues, whose variables it loads."""
    sessions, slurm = settings.sessions, settings.slurm
    carry = sessions.continuation
    return SessionSpec(
        storage=dict(settings.environment.storage),
        kernels=settings.kernels.model_dump(),
        tensorboard=TensorBoardSpec(max_instances=settings.tensorboard.max_instances),
        clock=ClockSpec(
            squeue=slurm.squeue,
            warn_minutes=tuple(sessions.warn_minutes),
            save_minutes=sessions.save_minutes,
            extend_hours=float(slurm.extend_step_hours) if slurm.allow_extend else 0.0,
        ),
        # the warning comes at most half the timeout early
        idle=IdleSpec(timeout=idle_timeout, warning=min(sessions.idle_warning_seconds, idle_timeout // 2)),
        jupyterlab_news=sessions.jupyterlab_news,
        guest_check_seconds=settings.sharing.check_seconds,
        usage=UsageSpec(sample_seconds=settings.usage.sample_seconds, report_seconds=settings.usage.report_seconds),
        apps=AppsSpec(
            offered=settings.apps.for_partition(partition),
            max_running=settings.apps.max_running,
            start_seconds=settings.apps.start_seconds,
            code_server=settings.apps.code_server,
        ),
        continuation=ContinuationSpec(
            enabled=carry.enabled,
            max_bytes=int(carry.max_gb * 10**9),
            dump_seconds=carry.dump_seconds,
            keep_hours=carry.keep_hours,
            continue_from=continue_from,
        ),
    )
