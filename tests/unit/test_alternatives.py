"""The fastest start's candidates and their words, by equality (spawner/hub/slurm/alternatives.py)."""

from __future__ import annotations

import pytest

from portal.config import load_config
from spawner.hub.request.options import SessionRequest
from spawner.hub.slurm.alternatives import MAX_ALTERNATIVES, candidates, difference, options_of

TYPES = {"sxm2": {"v100", "a100"}}


@pytest.fixture
def slurm(a_config_file):
    config = load_config(a_config_file).slurm
    sxm2 = config.partitions[0].model_copy(update={"name": "sxm2", "max_gpus": 4, "display_name": ""})
    partitions = [sxm2, sxm2.model_copy(update={"name": "debug", "default": False})]
    return config.model_copy(update={"partitions": partitions, "gpu_types": {"a100": "A100 80 GB"}})


def test_a_typed_request_has_any_type_the_other_type_another_partition_and_half_the_hours(slurm):
    asked = SessionRequest("sxm2", 2, 8.0, gpu_type="a100")
    assert candidates(asked, slurm, TYPES) == [
        asked,
        SessionRequest("sxm2", 2, 8.0),
        SessionRequest("sxm2", 2, 8.0, gpu_type="v100"),
        SessionRequest("debug", 2, 8.0),
        SessionRequest("sxm2", 2, 4.0, gpu_type="a100"),
    ]
    assert [difference(asked, c, slurm) for c in candidates(asked, slurm, TYPES)] == [
        "as asked",
        "any GPU type (whichever is free first)",
        "v100",
        "any GPU type (whichever is free first), on debug",
        "4 h instead of 8",
    ]


def test_no_types_for_a_session_without_gpus_nor_hidden_ones_and_never_more_than_the_bound(slurm):
    asked = SessionRequest("sxm2", 0, 1.5)
    assert candidates(asked, slurm, TYPES) == [asked, SessionRequest("debug", 0, 1.5)]
    hiding = slurm.model_copy(update={"hidden_gpu_types": ["v100"]})
    assert SessionRequest("sxm2", 1, 8.0, gpu_type="v100") not in candidates(
        SessionRequest("sxm2", 1, 8.0), hiding, TYPES
    )
    many = {"sxm2": {f"t{i}" for i in range(10)}}
    assert len(candidates(SessionRequest("sxm2", 1, 8.0), slurm, many)) == MAX_ALTERNATIVES
    # a partition too small for the GPUs asked is no alternative
    small = slurm.model_copy(
        update={"partitions": [slurm.partitions[0], slurm.partitions[1].model_copy(update={"max_gpus": 1})]}
    )
    assert all(c.partition == "sxm2" for c in candidates(SessionRequest("sxm2", 2, 1.0), small, {}))


def test_an_alternative_is_sent_as_the_form_sends_it():
    assert options_of(SessionRequest("sxm2", 2, 0.5, gpu_type="a100")) == {
        "partition": "sxm2",
        "gpus": "2",
        "hours": "0.5",
        "gpu_type": "a100",
    }
    assert options_of(SessionRequest("debug", 0, 8.0)) == {"partition": "debug", "gpus": "0", "hours": "8"}
