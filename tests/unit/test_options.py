"""Session options: defaults, every refused input class, resource math, the form."""

from __future__ import annotations

import html as html_text
import json
import re
from pathlib import Path

import pytest

from portal.config import load_config
from spawner.hub.base.pagescripts import script_path
from spawner.hub.request.form import render_options_form
from spawner.hub.request.options import OptionsError, SessionRequest, options_from_form, parse_options
from spawner.hub.request.resources import duration_words, resources_for


@pytest.fixture
def slurm(a_config_file):
    return load_config(a_config_file).slurm


def test_missing_keys_take_the_defaults(slurm):
    assert parse_options({}, slurm) == SessionRequest("sxm2", 1, 8.0)
    assert parse_options(None, slurm) == SessionRequest("sxm2", 1, 8.0)
    assert parse_options({"partition": "pcie"}, slurm) == SessionRequest("pcie", 1, 8.0)


def test_rest_and_form_values(slurm):
    assert parse_options({"partition": "sxm2", "gpus": 2, "hours": 8}, slurm) == SessionRequest("sxm2", 2, 8.0)
    assert parse_options({"gpus": "0", "hours": "1.5"}, slurm) == SessionRequest("sxm2", 0, 1.5)
    assert parse_options({"gpus": ["4"], "hours": [" 12 "]}, slurm) == SessionRequest("sxm2", 4, 12.0)
    assert options_from_form({"partition": ["pcie"], "gpus": ["2"], "hours": ["3"], "_xsrf": ["x"]}) == {
        "partition": "pcie",
        "gpus": "2",
        "hours": "3",
    }


@pytest.mark.parametrize(
    "options, message",
    [
        ({"partition": "gpu-huge"}, 'partition: "gpu-huge" is not offered here; choose one of sxm2, pcie.'),
        ({"partition": 3}, "partition: 3 is not offered here"),
        ({"partition": "sxm2\n#SBATCH --uid=0"}, "partition: line breaks and NUL characters are not allowed."),
        ({"gpus": 5}, "gpus: 5 is out of range; choose a whole number from 0 to 4 for partition sxm2."),
        (
            {"partition": "pcie", "gpus": 3},
            "gpus: 3 is out of range; choose a whole number from 0 to 2 for partition pcie.",
        ),
        ({"gpus": -1}, "gpus: -1 is out of range"),
        ({"gpus": 1.5}, "gpus: 1.5 is not a whole number"),
        ({"gpus": "two"}, 'gpus: "two" is not a whole number'),
        ({"gpus": True}, "gpus: true is not a whole number"),
        ({"gpus": "1; rm -rf ~"}, 'gpus: "1; rm -rf ~" is not a whole number'),
        ({"gpus": "1\x00"}, "gpus: line breaks and NUL characters are not allowed."),
        ({"gpus": None}, "gpus: null (empty) is not a whole number"),
        ({"hours": "eight"}, 'hours: "eight" is not a number; choose a number of hours above 0 and at most 12.'),
        ({"hours": 0}, "hours: 0 is out of range"),
        ({"hours": -3}, "hours: -3 is out of range"),
        ({"hours": 12.5}, "hours: 12.5 is out of range; choose a number of hours above 0 and at most 12."),
        ({"hours": float("nan")}, "hours: nan is not a number"),
        ({"hours": "1e3"}, 'hours: "1e3" is not a number'),
        ({"hours": "8\n"}, "hours: line breaks and NUL characters are not allowed."),
        ({"hours": [1, 2]}, "Each option may be given once."),
        (
            {"gpu": 2},
            'Unknown option(s) "gpu"; allowed are partition, gpus, shards, hours, gpu_type, account, qos, continue_from.',
        ),
        ({"gpus": 1, "mem": "1T", "script": "x"}, 'Unknown option(s) "mem", "script"; allowed are'),
        ({"continue_from": "../../bob"}, 'continue_from: "../../bob" is not a Slurm job id; leave it out'),
        ({"continue_from": "12_3"}, 'continue_from: "12_3" is not a Slurm job id'),
        ({"continue_from": True}, "continue_from: true is not a Slurm job id"),
        ({"continue_from": "0"}, 'continue_from: "0" is not a Slurm job id'),
        ([1, 2], "Session options must be a JSON object"),
    ],
)
def test_refused_inputs(slurm, options, message):
    with pytest.raises(OptionsError) as info:
        parse_options(options, slurm)
    assert str(info.value).startswith(message)


@pytest.mark.parametrize(
    "gpus, cpus, memory, summary",
    [
        (0, 4, "16G", "no GPU · 4 cores · 16 GB RAM · 8 h on sxm2"),
        (1, 8, "48G", "1 GPU · 8 cores · 48 GB RAM · 8 h on sxm2"),
        (2, 16, "96G", "2 GPUs · 16 cores · 96 GB RAM · 8 h on sxm2"),
        (3, 24, "144G", "3 GPUs · 24 cores · 144 GB RAM · 8 h on sxm2"),
        (4, 32, "192G", "4 GPUs · 32 cores · 192 GB RAM · 8 h on sxm2"),
    ],
)
def test_resource_math(slurm, gpus, cpus, memory, summary):
    res = resources_for(SessionRequest("sxm2", gpus, 8), slurm)
    assert (res.cpus, res.memory, res.time, res.summary()) == (cpus, memory, "08:00:00", summary)


def test_time_and_memory_spelling(slurm):
    assert resources_for(SessionRequest("sxm2", 1, 1.5), slurm).time == "01:30:00"
    assert resources_for(SessionRequest("sxm2", 1, 0.01), slurm).time == "00:01:00"
    assert resources_for(SessionRequest("sxm2", 1, 36), slurm).time == "1-12:00:00"
    odd = slurm.__class__(**{**vars(slurm), "memory_per_gpu": "1500M"})
    assert resources_for(SessionRequest("sxm2", 1, 1), odd).memory == "1500M"


@pytest.mark.parametrize(
    "hours, words", [(0.02, "1 min"), (0.5, "30 min"), (1.5, "1 h 30 min"), (8, "8 h"), (0.01, "1 min"), (2.999, "3 h")]
)
def test_the_summary_says_the_whole_minutes_the_job_gets(slurm, hours, words):
    # Slurm counts whole minutes; the log and the form say what the job really gets, never "0.0166667 h"
    assert resources_for(SessionRequest("sxm2", 1, hours), slurm).summary().endswith(f"· {words} on sxm2")


def test_options_form(slurm):
    html = render_options_form(slurm)
    assert '<select id="dsportal-partition" name="partition"' in html
    assert '<option value="sxm2" data-max-gpus="4" selected>' in html
    assert "V100 SXM2 (up to 4 GPUs)" in html and "pcie (up to 2 GPUs)" in html
    assert [f'value="{n}"' in html for n in range(5)] == [True] * 5
    assert 'id="dsportal-gpus-1" value="1" checked' in html
    assert 'max="12"' in html and 'value="8"' in html
    assert "1 GPU · 8 cores · 48 GB RAM · 8 h on sxm2" in html  # before any script runs
    # the page's script looks up what each GPU count brings, computed by the hub's one rule (an attribute, escaped)
    limits = json.loads(html_text.unescape(re.search(r'data-limits="([^"]*)"', html).group(1)))
    assert limits["shapes"]["0"] == {"cores": 4, "gb": 16.0} and limits["shapes"]["2"] == {"cores": 16, "gb": 96.0}
    assert limits["max_gpus"] == {"sxm2": 4, "pcie": 2}
    assert '<label for="dsportal-hours"' in html
    # the script is the versioned module the hub serves under its base URL (spawner/hub/base/pagescripts.py)
    assert f'<script type="module" src="/hub/{script_path("form.js")}"></script>' in html
    assert "<script>" not in html  # no inline script: its rules are tested (tests/js/form.test.mjs)


def test_a_sessions_length_is_said_in_the_words_the_forms_script_uses():
    # one table for both: spawner/hub/request/resources.py here, templates/static/formrules.js in tests/js
    table = json.loads((Path(__file__).parents[1] / "data" / "durations.json").read_text())
    assert [duration_words(minutes) for minutes, _ in table] == [words for _, words in table]


def test_form_escapes_admin_labels(slurm):
    labelled = slurm.partitions[0].model_copy(update={"display_name": 'A & B "big"'})
    slurm = slurm.model_copy(update={"partitions": [labelled, *slurm.partitions[1:]]})
    assert "A &amp; B &#34;big&#34;" in render_options_form(slurm)


def test_one_resource_rule_serves_the_form_the_job_and_what_is_free(slurm):
    from spawner.hub.request.form import shape
    from spawner.hub.request.resources import allocation

    assert allocation(2, slurm) == (16, 2 * 48 * 1024) and allocation(0, slurm) == (4, 16 * 1024)
    for gpus in range(5):
        res = resources_for(SessionRequest("sxm2", gpus, 1), slurm)
        assert shape(gpus, slurm) == {"cores": res.cpus, "gb": res.memory_mib / 1024}


TYPES = {"sxm2": {"v100", "a100", "t4"}, "pcie": set()}


def typed(slurm):
    return slurm.model_copy(update={"gpu_types": {"a100": "A100 80 GB"}, "hidden_gpu_types": ["t4"]})


def test_a_gpu_type_the_partition_has_is_taken_and_named_in_the_summary(slurm):
    slurm = typed(slurm)
    request = parse_options({"gpus": 2, "gpu_type": "a100"}, slurm, TYPES)
    assert request == SessionRequest("sxm2", 2, 8.0, "a100")
    assert resources_for(request, slurm).summary() == "2 GPUs (A100 80 GB) · 16 cores · 96 GB RAM · 8 h on sxm2"
    assert parse_options({"gpus": 1, "gpu_type": ["v100"]}, slurm, TYPES).gpu_type == "v100"  # no label: its name
    assert (
        resources_for(parse_options({"gpu_type": "v100"}, slurm, TYPES), slurm).summary().startswith("1 GPU (v100) · ")
    )
    for anything in ("", "any", None):  # any type
        assert parse_options({"gpus": 2, "gpu_type": anything}, slurm, TYPES).gpu_type == ""
    # Slurm did not say (sinfo failed): the form of the name is checked; sbatch refuses a type it does not know
    assert parse_options({"gpus": 1, "gpu_type": "h100"}, slurm, None).gpu_type == "h100"
    # a session that ran on a type the admin hid since still reads (after a hub restart: its GPUs, its culler)
    assert parse_options({"gpus": 1, "gpu_type": "t4"}, slurm, saved=True).gpu_type == "t4"
    with pytest.raises(OptionsError):
        parse_options({"gpus": 1, "gpu_type": "t4"}, slurm)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"gpus": 1, "gpu_type": "h100"},
            'gpu_type: partition sxm2 has no GPUs of type "h100" to ask for; choose one of a100 (A100 80 GB), v100, '
            "or any type.",
        ),
        (
            {"gpus": 1, "gpu_type": "t4"},  # hidden by the admin
            'gpu_type: partition sxm2 has no GPUs of type "t4" to ask for; choose one of a100 (A100 80 GB), v100, '
            "or any type.",
        ),
        (
            {"partition": "pcie", "gpus": 1, "gpu_type": "a100"},
            'gpu_type: partition pcie has no GPUs of type "a100" to ask for; leave the type empty (any type).',
        ),
        ({"gpus": 0, "gpu_type": "a100"}, 'gpu_type: "a100" asks for a GPU type with 0 GPUs; ask for GPUs, or no'),
        ({"gpus": 1, "gpu_type": "a100:2"}, 'gpu_type: "a100:2" is not a GPU type name; leave it empty for any type.'),
        ({"gpus": 1, "gpu_type": "a100,gpu:v100"}, 'gpu_type: "a100,gpu:v100" is not a GPU type name'),
        ({"gpus": 1, "gpu_type": "-x"}, 'gpu_type: "-x" is not a GPU type name'),
        ({"gpus": 1, "gpu_type": 100}, "gpu_type: 100 is not a GPU type name"),
        ({"gpus": 1, "gpu_type": "a100\n"}, "gpu_type: line breaks and NUL characters are not allowed."),
    ],
)
def test_a_gpu_type_is_refused_with_what_to_ask_for_instead(slurm, options, message):
    with pytest.raises(OptionsError) as info:
        parse_options(options, typed(slurm), TYPES)
    assert str(info.value).startswith(message), str(info.value)


def test_a_continuing_session_names_its_predecessors_job(slurm):
    assert parse_options({"gpus": 1, "continue_from": "4711"}, slurm).continue_from == "4711"
    assert parse_options({"gpus": 1, "continue_from": 4711}, slurm).continue_from == "4711"
    assert parse_options({"gpus": 1, "continue_from": ""}, slurm).continue_from == ""
    assert parse_options({"gpus": 1}, slurm).continue_from == ""
