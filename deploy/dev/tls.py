"""The dev cluster's own certificate authority and the portal's certificate (openssl).

The CA's key stays root's; the portal's key belongs to the hub's service
account (the proxy, running as it, serves HTTPS).  Both keys are created
under umask 077.  The CA is added to the system's trust store, so command-line
clients on this machine trust the portal; a browser elsewhere imports
/etc/dsportal/dev-ca/ca.crt (see the README).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from .common import ETC, SERVICE_USER, USERS, run, say

CA_DIR = ETC / "dev-ca"
CA_CERT = CA_DIR / "ca.crt"
CA_KEY = CA_DIR / "ca.key"
TLS_DIR = ETC / "tls"
CERT = TLS_DIR / "portal.crt"
KEY = TLS_DIR / "portal.key"
SYSTEM_TRUST = Path("/usr/local/share/ca-certificates/dsportal-dev-ca.crt")
HOST = "localhost"  # the hub's name; each user's server is USER.localhost (its own origin)


def names() -> list[str]:
    return [HOST, *(f"{user}.{HOST}" for user in USERS)]


def _openssl(*args: str) -> None:
    old = os.umask(0o077)  # keys are born private
    try:
        run(["openssl", *args], timeout=120)
    finally:
        os.umask(old)


def ensure_ca() -> bool:
    """The dev CA, in the system's trust store; True if new."""
    CA_DIR.mkdir(mode=0o700, parents=True, exist_ok=True)
    if CA_CERT.exists() and CA_KEY.exists() and SYSTEM_TRUST.exists():
        return False
    if not (CA_CERT.exists() and CA_KEY.exists()):
        say("making the dev cluster's certificate authority")
        _openssl(
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            str(CA_KEY),
            "-out",
            str(CA_CERT),
            "-days",
            "3650",
            "-subj",
            "/CN=DS Portal dev cluster CA",
        )
    CA_CERT.chmod(0o644)
    SYSTEM_TRUST.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(CA_CERT, SYSTEM_TRUST)
    run(["update-ca-certificates"], timeout=120)
    return True


def issue(cert: Path, key: Path, hosts: list[str], owner: str) -> bool:
    """A server certificate from the dev CA for `hosts` and 127.0.0.1, its key `owner`'s alone; True if new."""
    new_ca = ensure_ca()
    cert.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
    wanted = ",".join([*(f"DNS:{n}" for n in hosts), "IP:127.0.0.1"])
    stamp = cert.with_suffix(".names")
    if not new_ca and cert.exists() and key.exists() and stamp.exists() and stamp.read_text() == wanted:
        return False
    say(f"issuing {cert} from the dev CA")
    extensions = cert.with_suffix(".ext")
    extensions.write_text(
        f"subjectAltName={wanted}\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n"
        "extendedKeyUsage=serverAuth\n"
    )
    request = cert.with_suffix(".csr")
    _openssl(
        "req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(request), "-subj", f"/CN={hosts[0]}"
    )
    _openssl(
        "x509",
        "-req",
        "-in",
        str(request),
        "-CA",
        str(CA_CERT),
        "-CAkey",
        str(CA_KEY),
        "-CAcreateserial",
        "-out",
        str(cert),
        "-days",
        "825",
        "-extfile",
        str(extensions),
    )
    request.unlink()
    shutil.chown(key, owner, owner)
    key.chmod(0o600)
    cert.chmod(0o644)
    stamp.write_text(wanted)
    return True


def ensure_certificates() -> bool:
    """The portal's certificate for localhost, 127.0.0.1 and every demo user's host; True if new."""
    return issue(CERT, KEY, names(), SERVICE_USER)


def ensure_host_names() -> None:
    """USER.localhost resolves for this machine's own clients (browsers resolve *.localhost themselves)."""
    hosts = Path("/etc/hosts")
    text = hosts.read_text()
    known = {
        name for line in text.splitlines() if line.strip() and not line.startswith("#") for name in line.split()[1:]
    }
    missing = [n for n in names() if n not in known]
    if missing:
        with hosts.open("a") as f:
            f.write(f"127.0.0.1 {' '.join(missing)}  # DS Portal dev cluster: one origin per user\n")
