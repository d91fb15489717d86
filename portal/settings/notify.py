"""The admin YAML's section notify: the portal's e-mail to users who opted in."""

from __future__ import annotations

from .kinds import Flag, OptionalAbsPath, Timeout, integer, text
from .section import Section, key


class NotifySettings(Section):
    """E-mail to users who opted in: a job ended, a queued session started, a session has little time left."""

    smtp_host: text(r"[A-Za-z0-9.\[\]:_-]+", "must be a host name or address", allow_empty=True) = key(
        "", "Mail relay the hub sends through (SMTP); empty = no e-mail (JupyterLab and the home page still tell)."
    )
    smtp_port: integer(1, 65535) = key(25, "The relay's port.")
    starttls: Flag = key(
        False,
        "Use STARTTLS with the relay (port 587 relays usually want it). The relay's certificate must be signed "
        "by a trusted CA (the system's, or ca_file) and name smtp_host; one that does not gets no mail (logged).",
    )
    ca_file: OptionalAbsPath = key(
        "",
        "CA certificate file (PEM) that signed the relay's certificate, for a site CA the system does not trust "
        "(e.g. /etc/ssl/certs/site-ca.pem); empty = the system's CAs.",
    )
    sender: text(r"[^\s<>@]+@[A-Za-z0-9.-]+", "must be an e-mail address such as portal@example.org") = key(
        "dsportal@localhost", "The From address of the portal's mail."
    )
    timeout: Timeout = key(
        10, "Seconds before a relay that does not answer counts as down (the mail is dropped, logged)."
    )
    minutes_left: integer(1, 1440) = key(15, "Mail a session's owner this many minutes before its time limit.")
    queued_seconds: integer(1, 86400) = key(
        60, "A session that waited this many seconds for Slurm to start it counts as queued: its start is mailed."
    )
