"""`dsportal images pull` against the dev cluster's real registry (docker-registry, HTTPS, a password).

`deploy/devcluster up` pushed the dev image there (deploy/dev/registry.py);
here an unprivileged admin account fetches it back as it would from NGC,
the image runs, and each failure an admin meets gets its own message.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from deploy.dev import registry
from tests.support.http import free_port

DSPORTAL = "/opt/dsportal/venv/bin/dsportal"
ADMIN = "alice"  # any account: the pull needs no privilege
PASSWORD = registry.PASSWORD.read_text().strip() if registry.PASSWORD.exists() else ""


@pytest.fixture
def a_folder_of_alice():
    folder = Path(tempfile.mkdtemp(prefix="dsportal-pull-test-"))
    shutil.chown(folder, ADMIN, ADMIN)
    folder.chmod(0o755)  # the images in it are for every user
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def pull(folder: Path, ref: str, *args: str, password: str | None = None) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": f"/home/{ADMIN}", "LANG": "C.UTF-8"}
    if password is not None:
        env["DSPORTAL_REGISTRY_PASSWORD"] = password
    return subprocess.run(
        [
            "runuser",
            "-u",
            ADMIN,
            "--",
            DSPORTAL,
            "images",
            "pull",
            "--runtime",
            "charliecloud",
            "--dest",
            str(folder / "images"),
            *args,
            ref,
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )


def images_folder(folder: Path) -> Path:
    images = folder / "images"
    images.mkdir(exist_ok=True)
    shutil.chown(images, ADMIN, ADMIN)
    return images


def test_an_unprivileged_admin_pulls_the_image_and_it_runs(cluster_api, a_folder_of_alice):
    images = images_folder(a_folder_of_alice)
    result = pull(a_folder_of_alice, registry.REF, "--username", registry.USER, password=PASSWORD)
    assert result.returncode == 0, result.stderr
    assert "Copying blob" in result.stderr and "unpacked image rootfs" in result.stderr  # progress is shown
    assert PASSWORD not in result.stdout + result.stderr
    image = images / "debian-py_1"
    assert result.stdout.splitlines()[1:] == [
        "kernels:",
        "  containers:",
        "    - name: debian-py-1",
        '      display_name: "debian-py 1 (container)"',
        f"      image: {image}",
        "      runtime: charliecloud",
    ]
    # the work folder and its authfile are gone; beside the image, the registry's digest for the receipts
    assert sorted(p.name for p in images.iterdir()) == ["debian-py_1", "debian-py_1.digest"]
    inspected = subprocess.run(
        [
            "skopeo",
            "inspect",
            "--creds",
            f"{registry.USER}:{PASSWORD}",
            "--format",
            "{{.Digest}}",
            f"docker://{registry.REF}",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert inspected.returncode == 0, inspected.stderr
    assert (images / "debian-py_1.digest").read_text() == inspected.stdout.strip() + "\n"
    ran = subprocess.run(
        [
            "runuser",
            "-u",
            "bob",
            "--",
            "ch-run",
            str(image),
            "--",
            "python3",
            "-c",
            "import numpy; print(open('/dsportal-image').read().strip(), numpy.__name__)",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ran.stdout.split() == ["debian-py", "numpy"], ran.stderr  # another user runs what the admin pulled


@pytest.mark.parametrize(
    "case, expected",
    [
        ("wrong password", "localhost:5443 refused the login; check the user and the password"),
        (
            "unknown tag",
            "localhost:5443 has no image localhost:5443/dsportal/debian-py:no-such-tag; check the name and the tag",
        ),
        ("no login", "localhost:5443 asks for a login; pass --username NAME"),
        ("unreachable", "cannot reach localhost:{port}; check the host and the port"),
    ],
)
def test_each_failure_says_what_to_do_and_leaves_nothing(cluster_api, a_folder_of_alice, case, expected):
    images = images_folder(a_folder_of_alice)
    port = free_port()  # nothing listens there
    ref, login, password = registry.REF, ["--username", registry.USER], PASSWORD
    if case == "wrong password":
        password = "not-the-password"
    elif case == "unknown tag":
        ref = f"{registry.HOST}/{registry.REPOSITORY}:no-such-tag"
    elif case == "no login":
        login, password = [], None
    else:
        ref = f"localhost:{port}/{registry.REPOSITORY}:{registry.TAG}"
    result = pull(a_folder_of_alice, ref, *login, password=password)
    assert result.returncode == 1
    assert f"dsportal images pull: {expected.format(port=port)}" in result.stderr, result.stderr
    assert list(images.iterdir()) == []


def test_a_full_disk_is_named_and_its_space_given_back(cluster_api, a_folder_of_alice):
    images = images_folder(a_folder_of_alice)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=32m,mode=0755", "tmpfs", str(images)], check=True, timeout=30)
    try:
        shutil.chown(images, ADMIN, ADMIN)
        result = pull(a_folder_of_alice, registry.REF, "--username", registry.USER, password=PASSWORD)
        assert result.returncode == 1
        assert f"dsportal images pull: the disk is full; free space in {images}" in result.stderr, result.stderr
        assert list(images.iterdir()) == [] and shutil.disk_usage(images).used < 1024**2
    finally:
        with contextlib.suppress(subprocess.CalledProcessError):
            subprocess.run(["umount", str(images)], check=True, timeout=30)
