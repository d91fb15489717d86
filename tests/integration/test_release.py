"""A release as a site gets it (`deploy/devcluster release`: deploy/dev/release.py, hubimage.py), and the install
guide (docs/admins/install.md) run from it on a fresh head node, block by block, to a login and a session
(tests/support/guide.py says what the test stands in for, and why).

Alone: the guide's hub submits as alice and its pip, apt and npm take the machine's two cores for minutes."""

from __future__ import annotations

import json
import stat
import subprocess
import tarfile
import urllib.request
import zipfile
from pathlib import Path

import pytest
import yaml

from deploy.dev.common import ETC, STATE
from tests.support.guide import HeadNode, blocks
from tests.support.http import wait_until
from tests.support.hub import FormBrowser

pytestmark = pytest.mark.alone

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "admins" / "install.md"
HUB = "https://127.0.0.1:8400"  # the guide's hub, beside the dev cluster's on 8000


@pytest.fixture(scope="module")
def release() -> Path:
    out = STATE / "test-release"
    done = subprocess.run(
        [str(ROOT / "deploy" / "devcluster"), "release", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=2400,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def test_the_release_holds_what_a_site_installs_and_its_checksums_hold(release):
    version = (release / "RELEASE").read_text().split()[1]
    names = {p.relative_to(release).as_posix() for p in release.rglob("*") if p.is_file()}
    for wanted in [
        f"dsportal-{version}-py3-none-any.whl",
        f"dsportal-{version}.tar.gz",
        f"dsportal-hub-{version}.oci.tar",
        "deploy/systemd/dsportal-hub.service",
        "deploy/systemd/dsportal-proxy.service",
        "deploy/sudoers.d/dsportal",
        "deploy/portal.example.yaml",
        "deploy/jupyterhub_config.py",
        "deploy/locks/runtime-py3.11.txt",
        "deploy/locks/runtime-py3.13.txt",
        "deploy/session/apptainer.def",
        "deploy/session/Dockerfile",
        "INSTALL.md",
        "CHANGELOG.md",
    ]:
        assert wanted in names, wanted
    checked = subprocess.run(["sha256sum", "-c", "SHA256SUMS"], cwd=release, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.count(": OK") == len(names) - 1  # every file but SHA256SUMS itself
    # the session definitions name this release's files, with the version written in
    definition = (release / "deploy/session/apptainer.def").read_text()
    assert "@VERSION@" not in definition and f"dsportal-{version}-py3-none-any.whl" in definition
    # the wheel carries the built JupyterLab extension (no Node.js to install it); the sdist its source, no builds
    wheel = zipfile.ZipFile(release / f"dsportal-{version}-py3-none-any.whl").namelist()
    assert f"dsportal-{version}.data/data/share/jupyter/labextensions/dsportal/package.json" in wheel
    assert any("/labextensions/dsportal/static/" in n and n.endswith(".js") for n in wheel)
    sdist = tarfile.open(release / f"dsportal-{version}.tar.gz").getnames()
    assert f"dsportal-{version}/spawner/labext/src/index.ts" in sdist
    assert not any("node_modules" in n for n in sdist)


def test_the_hub_image_runs_the_releases_hub_as_the_service_account(release, tmp_path):
    version = (release / "RELEASE").read_text().split()[1]
    layout = tmp_path / "layout"
    copy = ["skopeo", "copy", "-q", f"oci-archive:{release}/dsportal-hub-{version}.oci.tar", f"oci:{layout}:{version}"]
    subprocess.run(copy, check=True, timeout=600)
    subprocess.run(
        ["umoci", "unpack", "--image", f"{layout}:{version}", str(tmp_path / "bundle")], check=True, timeout=600
    )
    config = json.loads((tmp_path / "bundle" / "config.json").read_text())
    assert config["process"]["args"] == [
        "/opt/dsportal/venv/bin/jupyterhub",
        "-f",
        "/etc/dsportal/jupyterhub_config.py",
    ]
    assert config["process"]["user"]["uid"] == 990  # the service account, never root, at its documented uid
    rootfs = tmp_path / "bundle" / "rootfs"
    said = subprocess.run(
        ["chroot", str(rootfs), "/opt/dsportal/venv/bin/dsportal", "--version"], capture_output=True, text=True
    )
    assert said.stdout.strip().endswith(version), said
    assert "dsportal:x:990:990:" in (rootfs / "etc/passwd").read_text()
    # nothing of the machine that built it
    assert (rootfs / "etc/hostname").read_text() == "" and not (rootfs / "var/log/bootstrap.log").exists()
    # no device nodes (the runtime makes /dev), and of the set-id programs sudo alone (the hub runs it)
    devices = [p for p in rootfs.rglob("*") if stat.S_ISCHR(p.lstat().st_mode) or stat.S_ISBLK(p.lstat().st_mode)]
    assert not devices, devices  # (lstat: /dev/stdout is a link, to the test's own terminal)
    found = subprocess.run(
        ["find", str(rootfs), "-xdev", "-type", "f", "-perm", "/6000"], capture_output=True, text=True
    )
    assert [Path(p).name for p in found.stdout.split()] == ["sudo"], found.stdout


def site_config() -> dict:
    """The admin file the site writes at step 3, here for the dev cluster on the guide hub's own ports."""
    dev = yaml.safe_load((ETC / "portal.yaml").read_text())
    slurm_keys = ["partitions", "gpu_types", "cores_per_gpu", "memory_per_gpu", "cpu_only_cores", "cpu_only_memory"]
    return {
        "hub": {
            "bind_url": HUB,
            "proxy_api_url": "http://127.0.0.1:8401",
            "tls_cert": "/etc/dsportal/tls/portal.crt",
            "tls_key": "/etc/dsportal/tls/portal.key",
            "internal_bind_url": "http://10.77.0.1:8481",
            "internal_connect_url": "http://10.77.0.1:8481",
            "data_dir": "/var/lib/dsportal",
            "external_proxy": True,
        },
        "ldap": dev["ldap"],
        "slurm": {**{k: dev["slurm"][k] for k in slurm_keys}, "user_groups": ["datasci"], "max_hours": 12},
        "environment": {"prefix": "/opt/dsportal/venv", "storage": {"isilon": "/mnt/isilon"}},
    }


def write_site_files(head: HeadNode) -> None:
    """Steps 3, 6 and 8's edits: the admin file, the LDAP service password, the certificate (the dev CA's)."""
    etc = head.root / "etc/dsportal"
    (etc / "portal.yaml").write_text(yaml.safe_dump(site_config()))
    (etc / "tls").mkdir(mode=0o750, exist_ok=True)
    for source, target in [
        (ETC / "tls/portal.crt", etc / "tls/portal.crt"),
        (ETC / "tls/portal.key", etc / "tls/portal.key"),
        (ETC / "ldap-service.pw", etc / "ldap-service.pw"),
    ]:
        target.write_bytes(source.read_bytes())
        target.chmod(0o600)
    head.sh("chown -R dsportal:dsportal /etc/dsportal/tls /etc/dsportal/ldap-service.pw")


def run_guide(head: HeadNode) -> list[str]:
    """Every command block of the guide, in order, with the site's edits before the block that checks them."""
    ran = []
    for block in blocks(GUIDE.read_text()):
        if "dsportal check-config /etc/dsportal/portal.yaml" in block.text:
            write_site_files(head)
        head.sh(block.text, timeout=1800)
        head.act(head.systemctl_calls())
        ran.append(block.section)
    return ran


@pytest.fixture(scope="module")
def head(release):
    node = HeadNode()
    node.make(release)
    try:
        yield node
    finally:
        node.close()


def test_the_install_guide_run_as_written_ends_with_a_login_and_a_session(head):
    sections = run_guide(head)
    assert sections[0].startswith("0.") and sections[-1].startswith("13."), sections  # the doctor, all OK, last
    browser = FormBrowser(HUB)
    # the hub answers once it has started (the guide's last blocks ran while it did): its login page, through the
    # guide's proxy
    wait_until(lambda: answered(browser, "/hub/login") == 200, timeout=90, what="the guide's hub's login page")
    status, page, location = browser.login("alice", "alice-pw")
    assert status == 302 and "/hub/" in location, (status, page[:500], head.log("dsportal-hub"))
    status, page, location = browser.post_form("/hub/spawn", {"partition": "cpu", "gpus": "0", "hours": "1"})
    assert status == 302, (status, page[:2000])

    def ready() -> bool:
        code, body, _ = browser.get("/hub/api/user")
        return code == 200 and json.loads(body).get("servers", {}).get("", {}).get("ready", False)

    wait_until(ready, timeout=180, what="alice's session from the guide's hub")
    # through the guide's proxy, to the session on its node: the single-user server sends her to log in there
    status, _, location = browser.get("/user/alice/lab")
    assert status == 302 and "/hub/api/oauth2/authorize" in location, (status, location)
    assert "DS Portal" in head.log("dsportal-hub")
    # stopping the server cancels the job, as on the dev cluster's hub
    assert alice_jobs(), "the session's job runs"
    jar = next(h.cookiejar for h in browser.opener.handlers if hasattr(h, "cookiejar"))
    xsrf = next(c.value for c in jar if c.name == "_xsrf")
    stop = urllib.request.Request(f"{HUB}/hub/api/users/alice/server", method="DELETE", headers={"X-XSRFToken": xsrf})
    with browser.opener.open(stop, timeout=60) as answer:
        assert answer.status in (202, 204)
    wait_until(lambda: not alice_jobs(), timeout=60, what="alice's session job cancelled")
    assert "Traceback" not in head.log("dsportal-hub"), head.log("dsportal-hub")[-3000:]


def answered(browser: FormBrowser, path: str) -> int:
    try:
        return browser.get(path)[0]
    except OSError:  # the proxy not listening yet
        return 0


def alice_jobs() -> list[str]:
    return subprocess.run(["squeue", "-h", "-u", "alice", "-o", "%i"], capture_output=True, text=True).stdout.split()
