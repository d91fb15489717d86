"""What a failed dev-cluster test reports of the hub's log (tests/support/hublog.py notable), by equality."""

from __future__ import annotations

from tests.support.hublog import notable

LOG = """\
[I 2026-11-30 14:55:30.001 JupyterHub log:192] 200 GET /hub/api/users (cluster@127.0.0.1) 4.20ms
[W 2026-11-30 14:55:36.117 JupyterHub proxy:391] Deleting stale route /user/alice/
[I 2026-11-30 14:55:36.200 JupyterHub spawner:80] Session job 12 of alice has ended (gone)
[I 2026-11-30 14:55:36.300 JupyterHub log:192] 302 GET /user/alice/api/kernels -> /hub/user/alice/api/kernels
[E 2026-11-30 14:55:37.000 JupyterHub web:1875] Uncaught exception
    Traceback (most recent call last):
"""


def test_the_lines_that_say_what_went_wrong_or_changed_are_kept_the_last_ones_first_cut():
    assert notable(LOG) == "\n".join(
        [
            "[W 2026-11-30 14:55:36.117 JupyterHub proxy:391] Deleting stale route /user/alice/",
            "[I 2026-11-30 14:55:36.200 JupyterHub spawner:80] Session job 12 of alice has ended (gone)",
            "[E 2026-11-30 14:55:37.000 JupyterHub web:1875] Uncaught exception",
            "    Traceback (most recent call last):",
        ]
    )
    assert notable(LOG, most=1) == "    Traceback (most recent call last):"
    assert notable("") == ""
