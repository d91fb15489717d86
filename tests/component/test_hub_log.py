"""A refused start in a real JupyterHub's log (mock Slurm): one WARNING line, without JupyterHub's ERRORs and
tracebacks (spawner/hub/request/refusal.py)."""

from __future__ import annotations

from tests.support.http import wait_until
from tests.support.hub import FormBrowser


def new_lines(hub, since: int) -> list[str]:
    return hub.log.read_text(errors="replace").splitlines()[since:]


def line_count(hub) -> int:
    return len(hub.log.read_text(errors="replace").splitlines())


def test_a_refused_option_is_one_warning_line_from_the_api_and_from_the_form(a_hub_and_its_slurm):
    a_hub, mock_slurm = a_hub_and_its_slurm
    submitted = len(mock_slurm.calls("sbatch"))
    before = line_count(a_hub)
    assert a_hub.api("POST", "/users/alice/server", {"gpus": 5})[0] == 400
    bob = FormBrowser(a_hub.url)
    assert bob.login("bob", "any")[0] == 302
    status, page, _ = bob.post_form("/hub/spawn", {"partition": "sxm2", "gpus": "1", "hours": "99"})
    assert status == 400 and "hours: 99 is out of range" in page
    wait_until(
        lambda: any("400 POST /hub/spawn" in line for line in new_lines(a_hub, before)), 10, "the form's answer logged"
    )
    lines = new_lines(a_hub, before)
    refusals = [line for line in lines if "Refused session options" in line]
    assert len(refusals) == 2 and all(line.startswith("[W ") for line in refusals), refusals
    assert [line for line in lines if line.startswith("[E ") or "Traceback" in line] == []
    assert len(mock_slurm.calls("sbatch")) == submitted
