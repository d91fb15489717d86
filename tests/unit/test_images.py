"""`dsportal images pull`: image names, logins and the planned commands (pure parts), by equality."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

import pytest

from portal.admin.images import (
    AUTHFILE,
    PullError,
    PullPlan,
    explain,
    find_tools,
    image_digest,
    kernel_yaml,
    plan_pull,
    write_digest,
)
from portal.admin.registry import (
    Credential,
    ImageRef,
    RefusedRequest,
    authfile_json,
    parse_ref,
    read_credential,
    runtime_env,
)

NGC_REF = ImageRef("nvcr.io", "nvidia/pytorch", "24.01-py3")
LOCAL_REF = ImageRef("localhost:5443", "dsportal/debian-py", "1")
TOOLS = {"skopeo": "/usr/bin/skopeo", "umoci": "/usr/bin/umoci", "apptainer": "/usr/bin/apptainer"}


@pytest.mark.parametrize(
    "text, expected",
    [
        ("nvcr.io/nvidia/pytorch:24.01-py3", NGC_REF),
        ("localhost:5443/dsportal/debian-py:1", LOCAL_REF),
        ("registry.example.org/team/sub/img_x:v1.2", ImageRef("registry.example.org", "team/sub/img_x", "v1.2")),
        ("head01:5000/img:latest", ImageRef("head01:5000", "img", "latest")),
    ],
)
def test_image_names_with_registry_and_tag_are_read(text, expected):
    assert parse_ref(text) == expected
    assert str(expected) == text


@pytest.mark.parametrize(
    "text",
    [
        "ubuntu:22.04",  # no registry: no implicit Docker Hub
        "nvcr.io/nvidia/pytorch",  # no tag: no implicit latest
        "nvcr.io/nvidia/PyTorch:1",  # upper case is not a repository name
        "nvcr.io/nvidia/pytorch:1; rm -rf /",
        "--help/x:1",
        "nvcr.io/../etc:1",
    ],
)
def test_anything_else_is_refused_with_an_example(text):
    with pytest.raises(RefusedRequest, match="e.g. nvcr.io/nvidia/pytorch:24.01-py3"):
        parse_ref(text)


def test_names_derived_from_an_image():
    assert (NGC_REF.file_stem, NGC_REF.kernel_name, NGC_REF.label) == (
        "pytorch_24.01-py3",
        "ngc-pytorch-24.01-py3",
        "pytorch 24.01-py3",
    )
    assert (LOCAL_REF.file_stem, LOCAL_REF.kernel_name) == ("debian-py_1", "debian-py-1")


def test_ngc_takes_its_api_key_from_the_environment_with_its_fixed_user():
    assert read_credential(NGC_REF, {"NGC_API_KEY": "k3y\n"}, None, None) == Credential("$oauthtoken", "k3y")
    with pytest.raises(RefusedRequest, match="no NGC API key: set NGC_API_KEY or pass --password-file"):
        read_credential(NGC_REF, {}, None, None)


def test_another_registry_needs_both_user_and_password_or_neither(tmp_path):
    secret = tmp_path / "pw"
    secret.write_text("s3cret\n")
    assert read_credential(LOCAL_REF, {}, "dev", str(secret)) == Credential("dev", "s3cret")
    assert read_credential(LOCAL_REF, {"DSPORTAL_REGISTRY_PASSWORD": "x"}, "dev", None) == Credential("dev", "x")
    assert read_credential(LOCAL_REF, {"NGC_API_KEY": "not-for-this-registry"}, None, None) is None
    with pytest.raises(RefusedRequest, match="no user; pass --username NAME"):
        read_credential(LOCAL_REF, {}, None, str(secret))
    with pytest.raises(RefusedRequest, match="no password for dev at localhost:5443"):
        read_credential(LOCAL_REF, {}, "dev", None)
    with pytest.raises(RefusedRequest, match="cannot read the password file"):
        read_credential(LOCAL_REF, {}, "dev", str(tmp_path / "missing"))


def test_the_password_is_in_no_repr():
    assert "s3cret" not in repr(Credential("dev", "s3cret"))


def test_skopeo_gets_the_login_in_an_authfile_and_apptainer_in_its_environment():
    auth = json.loads(authfile_json(LOCAL_REF, Credential("dev", "s3cret")))
    assert auth == {"auths": {"localhost:5443": {"auth": base64.b64encode(b"dev:s3cret").decode()}}}
    assert runtime_env("apptainer", Credential("u", "p")) == {
        "APPTAINER_DOCKER_USERNAME": "u",
        "APPTAINER_DOCKER_PASSWORD": "p",
    }
    assert runtime_env("singularity", None) == {}


def test_charliecloud_pulls_with_skopeo_and_unpacks_with_umoci():
    plan = plan_pull(LOCAL_REF, Path("/images"), "charliecloud", TOOLS, Path("/images/.work"), rootless=True)
    assert plan == PullPlan(
        "charliecloud",
        LOCAL_REF,
        Path("/images/debian-py_1"),
        (
            (
                "/usr/bin/skopeo",
                "copy",
                "--src-authfile",
                AUTHFILE,
                "docker://localhost:5443/dsportal/debian-py:1",
                "oci:/images/.work/oci:1",
            ),
            ("/usr/bin/umoci", "raw", "unpack", "--rootless", "--image", "/images/.work/oci:1", "/images/.work/image"),
        ),
        Path("/images/.work/image"),
    )
    as_root = plan_pull(LOCAL_REF, Path("/images"), "charliecloud", TOOLS, Path("/w"), rootless=False)
    assert "--rootless" not in as_root.steps[1]


def test_apptainer_pulls_into_a_sif_and_no_step_holds_a_password():
    plan = plan_pull(NGC_REF, Path("/images"), "apptainer", TOOLS, Path("/images/.work"), rootless=True)
    assert plan.dest == Path("/images/pytorch_24.01-py3.sif")
    assert plan.steps == (
        (
            "/usr/bin/apptainer",
            "pull",
            "/images/.work/pytorch_24.01-py3.sif",
            "docker://nvcr.io/nvidia/pytorch:24.01-py3",
        ),
    )


def test_a_missing_tool_is_named_with_its_package():
    with pytest.raises(
        PullError, match=r"umoci not installed on this machine; install it \(Debian: apt install umoci\)"
    ):
        find_tools("charliecloud", which=lambda t: None if t == "umoci" else f"/usr/bin/{t}")
    assert find_tools(None, which=lambda t: None if t in ("apptainer", "singularity") else f"/usr/bin/{t}") == (
        "charliecloud",
        {"skopeo": "/usr/bin/skopeo", "umoci": "/usr/bin/umoci"},
    )
    with pytest.raises(PullError, match="no container tools here"):
        find_tools(None, which=lambda t: None)


@pytest.mark.parametrize(
    "output, anonymous, expected",
    [
        (
            "reading manifest 1 in localhost:5443/x: unauthorized: authentication required",
            False,
            "localhost:5443 refused the login; check the user and the password",
        ),
        (
            "unauthorized: authentication required",
            True,
            "localhost:5443 asks for a login; pass --username NAME with the password in $DSPORTAL_REGISTRY_PASSWORD",
        ),
        (
            "manifest unknown: manifest unknown",
            False,
            "localhost:5443 has no image localhost:5443/dsportal/debian-py:1",
        ),
        ("dial tcp 127.0.0.1:5444: connect: connection refused", False, "cannot reach localhost:5443"),
        ("write /images/.work/oci/blobs/x: no space left on device", False, "the disk is full; free space in /images"),
        # a blob's hash holds "401" (and "404") now and then: a full disk stays a full disk (seen in a suite run)
        (
            "Copying blob sha256:4ad3384b4821acddc86157d699ae5beb3d8da67c78401c3876254a2639a4cb6e\n"
            'level=fatal msg="writing blob: write /images/.work/oci/oci-put-blob123952651: no space left on device"',
            False,
            "the disk is full; free space in /images",
        ),
        ("Copying blob sha256:aa78401c\nreading manifest: manifest unknown", False, "localhost:5443 has no image"),
        ("received unexpected HTTP status: 401 Unauthorized", False, "localhost:5443 refused the login"),
        ("something else\nentirely", False, "the pull failed:\nsomething else\nentirely"),
    ],
)
def test_failures_become_what_to_do(output, anonymous, expected):
    plan = plan_pull(LOCAL_REF, Path("/images"), "charliecloud", TOOLS, Path("/images/.work"), rootless=True)
    assert explain(output, plan, anonymous=anonymous).startswith(expected)


def test_the_yaml_that_offers_the_image():
    plan = plan_pull(NGC_REF, Path("/images"), "apptainer", TOOLS, Path("/w"), rootless=False)
    assert kernel_yaml(plan) == (
        "kernels:\n  containers:\n    - name: ngc-pytorch-24.01-py3\n"
        '      display_name: "pytorch 24.01-py3 (NGC container)"\n'
        "      image: /images/pytorch_24.01-py3.sif\n      runtime: apptainer\n"
    )


def test_a_step_never_echoes_the_password():
    import io

    from portal.admin.images import _run_step

    shown = io.StringIO()
    output = _run_step(["/bin/echo", "login with s3cret-password ok"], {}, 10, shown, "s3cret-password", 10)
    assert shown.getvalue() == output == "login with *** ok\n"


def test_an_images_digest_is_the_registrys_for_charliecloud_and_the_files_for_a_sif(tmp_path):
    ref = LOCAL_REF
    tools = {**TOOLS, "apptainer": "/usr/bin/apptainer"}
    work = tmp_path / "work"
    (work / "oci").mkdir(parents=True)
    digest = "sha256:" + "ab" * 32
    (work / "oci" / "index.json").write_text(json.dumps({"manifests": [{"digest": digest}]}))
    plan = plan_pull(ref, tmp_path, "charliecloud", tools, work, rootless=True)
    assert image_digest(plan, work) == digest
    (work / "oci" / "index.json").write_text(json.dumps({"manifests": [{"digest": "sha256:../../x"}]}))
    assert image_digest(plan, work) == ""  # not a digest: none written
    sif = plan_pull(ref, tmp_path, "apptainer", tools, work, rootless=True)
    sif.partial.write_bytes(b"SIF image bytes")
    assert image_digest(sif, work) == "sha256:" + hashlib.sha256(b"SIF image bytes").hexdigest()
    write_digest(tmp_path / "pytorch.sif", "sha256:" + "cd" * 32)
    assert (tmp_path / "pytorch.sif.digest").read_text() == "sha256:" + "cd" * 32 + "\n"
    assert oct((tmp_path / "pytorch.sif.digest").stat().st_mode & 0o777) == "0o644"
