"""The dev cluster's image registry: Debian's docker-registry on the loopback, HTTPS and a password.

It stands in for NGC: `up` pushes the dev image (deploy/dev/images.py) to
it once, with umoci (the directory -> an OCI layout) and skopeo (the layout
-> the registry), then fetches it back with the portal's own
`dsportal images pull`, as an admin would from NGC; the dev config offers
that pulled image as a second container kernel.  The registry runs as its
own account; its key and the login's password file are readable only by
their owners.
"""

from __future__ import annotations

import pwd
import secrets
import shutil
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

# standard library only, like the dev cluster's own code: the portal's image names and its private authfile
from portal.admin.images import write_authfile
from portal.admin.registry import Credential, parse_ref

from . import images, tls
from .common import ETC, REGISTRY_STATE, VENV, ClusterError, run, say, write_if_changed
from .supervisor import Program

ACCOUNT = "dsportal-registry"
PORT = 5443
HOST = f"localhost:{PORT}"
HOME = REGISTRY_STATE  # its own folder: supervisord enters it as the registry account
CONFIG = HOME / "config.yml"
HTPASSWD = HOME / "htpasswd"
CERT = ETC / "registry" / "registry.crt"
KEY = ETC / "registry" / "registry.key"
USER = "dsportal-dev"
PASSWORD = ETC / "registry" / "password"  # root's: the tests and `up` log in with it
REPOSITORY = "dsportal/debian-py"
TAG = "1"
REF = f"{HOST}/{REPOSITORY}:{TAG}"
PULLED = images.IMAGES / "pulled"  # what `dsportal images pull` made; the dev config's second container kernel

CONFIG_TEXT = f"""version: 0.1
log:
  level: info
storage:
  filesystem:
    rootdirectory: {HOME / "data"}
  delete:
    enabled: true
http:
  addr: 127.0.0.1:{PORT}
  tls:
    certificate: {CERT}
    key: {KEY}
auth:
  htpasswd:
    realm: dsportal-dev-registry
    path: {HTPASSWD}
"""


def program() -> Program:
    return Program(
        "registry",
        ["/usr/bin/docker-registry", "serve", str(CONFIG)],
        str(PORT),
        user=ACCOUNT,
        directory=str(HOME),
        umask="077",
    )


def ensure_registry_files() -> bool:
    """Its account, certificate, password and configuration; True if any changed (restart it)."""
    try:
        pwd.getpwnam(ACCOUNT)
    except KeyError:
        run(
            [
                "useradd",
                "--system",
                "--user-group",
                "--home-dir",
                str(HOME),
                "--no-create-home",
                "--shell",
                "/usr/sbin/nologin",
                ACCOUNT,
            ]
        )
    (HOME / "data").mkdir(mode=0o700, parents=True, exist_ok=True)
    run(["chown", "-R", f"{ACCOUNT}:{ACCOUNT}", str(HOME)])
    HOME.chmod(0o700)
    changed = tls.issue(CERT, KEY, ["localhost"], ACCOUNT)
    if not PASSWORD.exists():
        write_if_changed(PASSWORD, secrets.token_urlsafe(24), mode=0o600)
        HTPASSWD.unlink(missing_ok=True)
    if not HTPASSWD.exists():
        # htpasswd reads the password on stdin (-i): never on a command line; bcrypt, which the registry requires
        made = run(["htpasswd", "-inB", USER], input=PASSWORD.read_text().strip())
        write_if_changed(HTPASSWD, made.stdout, mode=0o600, owner=ACCOUNT)
        changed = True
    return write_if_changed(CONFIG, CONFIG_TEXT, mode=0o600, owner=ACCOUNT) or changed


def ensure_pushed() -> None:
    """The dev image is in the registry under REF (pushed again when its recipe changed)."""
    stamp = HOME / "pushed"
    if stamp.exists() and stamp.read_text() == images.recipe():
        return
    with tempfile.TemporaryDirectory(prefix="dsportal-push-") as work:
        layout = f"{work}/oci:{TAG}"
        say(f"pushing {images.IMAGE} to the dev registry as {REF}")
        run(["umoci", "init", "--layout", f"{work}/oci"])
        run(["umoci", "new", "--image", layout])
        run(["umoci", "insert", "--image", layout, str(images.IMAGE), "/"], timeout=600)
        authfile = write_authfile(Path(work), parse_ref(REF), Credential(USER, PASSWORD.read_text().strip()))
        run(
            ["skopeo", "copy", "--quiet", "--dest-authfile", str(authfile), f"oci:{layout}", f"docker://{REF}"],
            timeout=600,
        )
    stamp.write_text(images.recipe())


def ensure_pulled() -> None:
    """The registry's image fetched back with `dsportal images pull --runtime charliecloud`, as an admin does."""
    stamp = PULLED / ".recipe"
    dest = PULLED / parse_ref(REF).file_stem  # where `dsportal images pull` puts it
    if dest.is_dir() and stamp.exists() and stamp.read_text() == images.recipe():
        return
    PULLED.mkdir(mode=0o755, parents=True, exist_ok=True)
    shutil.rmtree(dest, ignore_errors=True)
    say(f"pulling {REF} into {PULLED} with dsportal images pull")
    result = run(
        [
            str(VENV / "bin" / "dsportal"),
            "images",
            "pull",
            "--runtime",
            "charliecloud",
            "--username",
            USER,
            "--password-file",
            str(PASSWORD),
            "--dest",
            str(PULLED),
            REF,
        ],
        timeout=900,
        check=False,
    )
    if result.returncode != 0:
        raise ClusterError(f"dsportal images pull failed:\n{result.stderr.strip()[-2000:]}")
    stamp.write_text(images.recipe())


def answers() -> bool:
    """Up, over HTTPS with the dev CA's certificate, and asking for the login."""
    try:
        urllib.request.urlopen(f"https://{HOST}/v2/", timeout=5).close()
    except urllib.error.HTTPError as e:
        return e.code == 401
    except OSError:
        return False
    return False  # it answered without asking for a login
