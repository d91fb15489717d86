"""The usage benchmark's rig: the mock Slurm's accounting reads as sacct's (parse_usage), and the scrape config
of the rig's Prometheus."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

from spawner.slurmaccounting import UsedJob, parse_usage
from tests.support.mockslurm import _usage_lines
from tests.support.prometheus import scrape_config


def test_the_mock_accounting_reads_as_sacct_would_and_leaves_out_pending_jobs():
    jobs = {
        "101": {
            "user": "u00001",
            "state": "RUNNING",
            "options": {
                "partition": "sxm2",
                "cpus-per-task": "16",
                "mem": "98304M",
                "gres": "gpu:a100:2",
                "account": "nlp",
            },
        },
        "102": {"user": "u00002", "state": "CANCELLED", "options": {"partition": "sxm2", "cpus-per-task": "8"}},
        "103": {"user": "u00003", "state": "PENDING", "options": {"partition": "pcie", "gres": "gpu:1"}},
    }
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        _usage_lines(jobs)
    assert parse_usage(out.getvalue()) == [
        UsedJob(
            "101",
            "u00001",
            "sxm2",
            "RUNNING",
            "2026-11-22T08:00:00",
            "",
            3600,
            14400.0,
            16,
            2,
            98304,
            1024,
            account="nlp",
            gpu_type="a100",
        ),
        UsedJob(
            "102",
            "u00002",
            "sxm2",
            "CANCELLED",
            "2026-11-22T08:00:00",
            "2026-11-22T09:00:00",
            3600,
            7200.0,
            8,
            0,
            1024,
            1024,
        ),
    ]


def test_the_rigs_prometheus_scrapes_the_hubs_metrics_with_the_token_file():
    assert scrape_config("127.0.0.1:8123", Path("/tmp/x/token"), 5) == (
        "global:\n"
        "  scrape_interval: 5s\n"
        "  evaluation_interval: 5s\n"
        "scrape_configs:\n"
        "  - job_name: dsportal\n"
        "    scheme: http\n"
        "    metrics_path: /hub/metrics\n"
        "    authorization:\n"
        "      type: Bearer\n"
        "      credentials_file: /tmp/x/token\n"
        "    static_configs:\n"
        '      - targets: ["127.0.0.1:8123"]\n'
    )
