"""Container kernels as the admin sees them: which runtime runs which image, or what is missing."""

from __future__ import annotations

from portal.admin.doctor import Result, container_images
from portal.config import parse_config

CONFIG = {
    "ldap": {"bind_dn_template": "uid={username},dc=x"},
    "kernels": {
        "container_runtime": "charliecloud",
        "containers": [
            {"name": "debian-py", "display_name": "Debian", "image": "/opt/containers/debian-py"},
            {"name": "ngc", "display_name": "NGC", "image": "/shared/pytorch.sif", "runtime": "apptainer"},
        ],
    },
}


def test_each_container_kernel_names_its_runtime_and_image():
    settings = parse_config(CONFIG)
    found = container_images(
        settings,
        which=lambda c: f"/usr/bin/{c}" if c == "ch-run" else None,
        exists=lambda p: True,
        privileges=lambda p: [],
    )
    assert found == [
        Result("kernel debian-py", True, "charliecloud (/usr/bin/ch-run) runs /opt/containers/debian-py"),
        Result(
            "kernel ngc",
            False,
            "apptainer (apptainer) is not installed here; install it on this machine and "
            "the compute nodes, or change kernels.containers[].runtime",
        ),
    ]
    missing = container_images(
        settings, which=lambda c: f"/usr/bin/{c}", exists=lambda p: p.endswith(".sif"), privileges=lambda p: []
    )
    assert missing[0] == Result(
        "kernel debian-py",
        False,
        "image /opt/containers/debian-py not found; pull it "
        "(dsportal images pull) onto storage every compute node mounts",
    )


def test_an_image_with_a_way_to_root_fails_the_check():
    settings = parse_config(CONFIG)
    found = container_images(
        settings,
        which=lambda c: f"/usr/bin/{c}",
        exists=lambda p: True,
        privileges=lambda p: (
            ["/opt/containers/debian-py/bin/su (setuid -rwsr-xr-x)"] if p.endswith("debian-py") else []
        ),
    )
    assert found[0] == Result(
        "kernel debian-py",
        False,
        (
            "image /opt/containers/debian-py holds setuid/setgid programs or device nodes (/opt/containers/debian-py/bin/su "
            "(setuid -rwsr-xr-x) ...): any user could become root through them on storage without nosuid. Pull it again "
            "with dsportal images pull, which removes them"
        ),
    )
    assert found[1].ok
