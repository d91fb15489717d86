"""The dev cluster's job accounting (slurmdbd, MariaDB) and its local mail server (exim).

Accounting: the hub reads finished jobs with sacct as its unprivileged
account, and must see every user's.  Mail: the address the directory gives a
demo user reaches that user's mailbox.
"""

from __future__ import annotations

import smtplib
import subprocess
import uuid
from email.message import EmailMessage

from deploy.dev.common import LDAP_URI, SERVICE_USER
from deploy.dev.directory import PEOPLE, SERVICE_DN
from spawner.slurmvocab import AccountedJob, accounting_argv, parse_accounting, parse_job_id
from tests.support.http import wait_until
from tests.support.mail import mailbox_of, wait_for_mail

SERVICE_PASSWORD = "/etc/dsportal/ldap-service.pw"  # the portal's own directory login, written by `up`


def submit(user: str, partition: str, name: str) -> str:
    """A one-second batch job of `user`'s, as the user submits it; its job id."""
    done = subprocess.run(
        ["runuser", "-u", user, "--", "sbatch", "--parsable", f"--chdir=/home/{user}", "--output=/dev/null"]
        + [f"--partition={partition}", f"--job-name={name}", "--wrap", "sleep 1"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    return parse_job_id(done.stdout)


def accounted_as_the_hub() -> dict[str, AccountedJob]:
    """The hub's own sacct call (the last day, every user), run as the hub's service account."""
    done = subprocess.run(
        ["runuser", "-u", SERVICE_USER, "--", *accounting_argv("sacct", 1)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    return {job.job_id: job for job in parse_accounting(done.stdout)}


def test_every_users_finished_jobs_are_in_the_accounting_the_hub_reads(cluster_api):
    name = f"acct-{uuid.uuid4().hex[:8]}"
    owners = {submit("alice", "debug", name): "alice", submit("bob", "sxm2", name): "bob"}

    def all_completed() -> dict[str, AccountedJob] | None:
        seen = accounted_as_the_hub()
        return seen if all(seen.get(j) and seen[j].state == "COMPLETED" for j in owners) else None

    seen = wait_until(all_completed, 60, f"jobs {', '.join(owners)} COMPLETED in sacct as {SERVICE_USER}", every=0.5)
    # no job name in the hub's accounting: a name is free text any user chooses (spawner/slurmvocab.py)
    assert {j: (seen[j].user, seen[j].exit_code, seen[j].nodes) for j in owners} == {
        j: (user, "0:0", 1) for j, user in owners.items()
    }
    assert seen[next(iter(owners))].partition == "debug"


def directory_mail(uid: str) -> str:
    """`uid`'s `mail` attribute, read as the portal reads the directory."""
    done = subprocess.run(
        ["ldapsearch", "-x", "-LLL", "-H", LDAP_URI, "-D", SERVICE_DN, "-y", SERVICE_PASSWORD, "-b", PEOPLE]
        + [f"(uid={uid})", "mail"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    return next((line.split(":", 1)[1].strip() for line in done.stdout.splitlines() if line.startswith("mail:")), "")


def test_mail_to_a_users_directory_address_lands_in_their_mailbox(cluster_api):
    address = directory_mail("alice")
    assert address == "alice@dsportal.test"
    subject = f"dev cluster mail check {uuid.uuid4().hex}"
    message = EmailMessage()
    message["From"] = "dsportal@localhost"
    message["To"] = address
    message["Subject"] = subject
    message.set_content("Your job ended.\n")
    with smtplib.SMTP("127.0.0.1", 25, timeout=10) as smtp:
        assert smtp.send_message(message) == {}  # no recipient refused

    delivered = wait_for_mail("alice", subject)
    assert (delivered["To"], delivered["Subject"], delivered.get_payload()) == (address, subject, "Your job ended.\n")
    assert mailbox_of("alice").owner() == "alice"  # the user's own mbox, as a mail reader expects it
