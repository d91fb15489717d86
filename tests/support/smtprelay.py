"""A mail relay on a loopback port that offers STARTTLS with a certificate the test chose (standard library only).

`Relay(cert, key)` speaks just enough SMTP for smtplib's send_message: EHLO
(offering STARTTLS until it is on), STARTTLS, MAIL, RCPT, DATA, RSET, NOOP,
QUIT.  What it received arrives in `received` (each message's bytes).
`certificates(folder)` makes a site CA and three relay certificates with
openssl: one from the CA for localhost and 127.0.0.1, one from the CA for
another name, and one self-signed for localhost.
"""

from __future__ import annotations

import socketserver
import ssl
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Certificates:
    ca: Path  # the site's CA (PEM): what notify.ca_file names
    right: tuple[Path, Path]  # (cert, key) from the CA for localhost and 127.0.0.1
    wrong_name: tuple[Path, Path]  # from the CA, for mail.example.org
    self_signed: tuple[Path, Path]  # for localhost, signed by nobody the hub trusts


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)


def _issue(folder: Path, name: str, host: str, ca: tuple[Path, Path] | None) -> tuple[Path, Path]:
    cert, key = folder / f"{name}.crt", folder / f"{name}.key"
    extensions = folder / f"{name}.ext"
    extensions.write_text(f"subjectAltName=DNS:{host},IP:127.0.0.1\nbasicConstraints=CA:FALSE\n")
    if ca is None:
        _openssl(
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "2",
            "-subj", f"/CN={host}", "-addext", f"subjectAltName=DNS:{host},IP:127.0.0.1",
        )  # fmt: skip
        return cert, key
    request = folder / f"{name}.csr"
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(request), "-subj", f"/CN={host}")
    _openssl(
        "x509", "-req", "-in", str(request), "-CA", str(ca[0]), "-CAkey", str(ca[1]), "-CAcreateserial",
        "-out", str(cert), "-days", "2", "-extfile", str(extensions),
    )  # fmt: skip
    return cert, key


def certificates(folder: Path) -> Certificates:
    ca = folder / "site-ca.crt", folder / "site-ca.key"
    _openssl(
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(ca[1]), "-out", str(ca[0]), "-days", "2",
        "-subj", "/CN=Test site CA",
    )  # fmt: skip
    return Certificates(
        ca=ca[0],
        right=_issue(folder, "relay", "localhost", ca),
        wrong_name=_issue(folder, "other", "mail.example.org", ca),
        self_signed=_issue(folder, "selfsigned", "localhost", None),
    )


def _message(reader) -> bytes:
    """DATA's lines up to the lone dot."""
    lines = []
    while (line := reader.readline(65536)) not in (b".\r\n", b""):
        lines.append(line)
    return b"".join(lines)


class _Session(socketserver.BaseRequestHandler):
    server: _Server

    def handle(self) -> None:
        sock = self.request
        reader = sock.makefile("rb")
        secure = False

        def say(line: str) -> None:
            sock.sendall(line.encode() + b"\r\n")

        say("220 relay ESMTP test")
        while line := reader.readline(65536):
            verb = line[:4].upper()
            if verb == b"EHLO":
                say("250-relay" if not secure else "250 relay")
                if not secure:
                    say("250 STARTTLS")
            elif verb == b"STAR" and not secure:
                say("220 go ahead")
                try:
                    sock = self.server.context.wrap_socket(sock, server_side=True)
                except (ssl.SSLError, OSError) as e:  # the client refused the certificate
                    self.server.refused.append(str(e))
                    return
                reader, secure = sock.makefile("rb"), True
            elif verb == b"DATA":
                say("354 end with .")
                self.server.received.append(_message(reader))
                say("250 queued")
            elif verb == b"QUIT":
                say("221 bye")
                return
            elif verb in (b"MAIL", b"RCPT", b"RSET", b"NOOP"):
                say("250 ok")
            else:
                say("502 not here")


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, context: ssl.SSLContext):
        self.context = context
        self.received: list[bytes] = []
        self.refused: list[str] = []  # TLS handshakes that failed, in the relay's words
        super().__init__(("127.0.0.1", 0), _Session)


class Relay:
    """A relay serving `cert` (with `key`) over STARTTLS on 127.0.0.1:`port` until `stop()`."""

    def __init__(self, cert: Path, key: Path):
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self._server = _Server(context)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def received(self) -> list[bytes]:
        return self._server.received

    @property
    def refused(self) -> list[str]:
        return self._server.refused

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(10)
