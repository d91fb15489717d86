"""Slurm's job accounting in the dev cluster: Debian's MariaDB and slurmdbd, each in the foreground.

slurmctld sends every job to slurmdbd, which keeps it in MariaDB; `sacct`
reads it back, also as the hub's unprivileged account (the jobs panel).
MariaDB gets a data folder of its own, apart from Debian's /var/lib/mysql, so
`reset` removes the accounting's state with that folder and `up` starts
from an empty database.  The order: MariaDB, then slurmdbd, then slurmctld
(__main__.start_accounting).
"""

from __future__ import annotations

import secrets
import shutil
from pathlib import Path

from .common import CLUSTER_NAME, LOGS, PRIVATE_DATA, SLURMDBD_PORT, STATE, run, say, write_if_changed
from .platform import Platform
from .supervisor import Program

DB_DIR = Path("/var/lib/dsportal-mariadb")  # the mysql account's own (STATE is root's, 0750)
DB_DATA = DB_DIR / "data"
DB_SOCKET = DB_DIR / "mysqld.sock"  # not Debian's /run/mysqld: a system MariaDB may use that one
DB_PORT = 3306
DB_NAME = "slurm_acct_db"  # with the platform's suffix (database_of): 24.11 converts 22.05's for good
DB_USER = "slurm"
DB_PASSWORD = STATE / "slurmdbd-db.pw"  # root's alone (0600): slurmdbd.conf holds it too
SLURMDBD_CONF = Path("/etc/slurm/slurmdbd.conf")
MARIADB_ACCOUNT = "mysql"  # made by Debian's mariadb-server package
MARIADB_CLIENT = ["/usr/bin/mariadb", "--no-defaults", f"--socket={DB_SOCKET}"]


def mariadb_argv() -> list[str]:
    """MariaDB on 127.0.0.1 only, with no option file: Debian's /etc/mysql is for its own server.

    skip-name-resolve: slurmdbd comes over TCP from 127.0.0.1, which then
    matches the grant's host literally, with no DNS lookup on a connect.
    innodb-buffer-pool-size=512M and innodb-lock-wait-timeout=900: slurmdbd
    logs "Database settings not recommended values" below them (22.05 still
    complained at 256M).  The pool is filled only as pages are read: with
    the dev cluster's few jobs MariaDB holds about 115 MB.
    """
    return [
        "/usr/sbin/mariadbd",
        "--no-defaults",
        f"--datadir={DB_DATA}",
        f"--socket={DB_SOCKET}",
        f"--pid-file={DB_DIR / 'mariadbd.pid'}",
        "--bind-address=127.0.0.1",
        f"--port={DB_PORT}",
        "--skip-name-resolve",
        "--innodb-buffer-pool-size=512M",
        "--innodb-lock-wait-timeout=900",
    ]


def database_of(platform: Platform) -> str:
    """The platform's accounting database (pure): slurm_acct_db, slurm_acct_db_24_11."""
    return DB_NAME + platform.suffix.replace("-", "_").replace(".", "_")


def slurmdbd_conf(password: str, database: str = DB_NAME) -> str:
    """slurmdbd.conf: slurmdbd on localhost, its jobs in MariaDB over TCP as the `slurm` database user."""
    return f"""\
# slurmdbd for the DS Portal dev cluster (written by deploy/devcluster): 0600, it holds the database password.
AuthType=auth/munge
DbdHost=localhost
DbdPort={SLURMDBD_PORT}
SlurmUser=root
LogFile={LOGS}/slurmdbd.log
PidFile=/run/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort={DB_PORT}
StorageUser={DB_USER}
StoragePass={password}
StorageLoc={database}
# As many sites: sacct and sacctmgr show each user only their own jobs, usage, record and accounts.
# The hub's account sees through it as a coordinator of the users' accounts (deploy/dev/associations.py).
PrivateData={PRIVATE_DATA}
"""


def database_user_sql(password: str, database: str = DB_NAME) -> str:
    """The `slurm` database user with this password and every right on the accounting database, idempotent.

    ALTER USER as well as CREATE: a password file made anew (after it was
    deleted by hand) still matches the database.  The password is hex
    (new_password), so it needs no quoting.
    """
    account = f"'{DB_USER}'@'127.0.0.1'"
    return (
        f"CREATE USER IF NOT EXISTS {account} IDENTIFIED BY '{password}';\n"
        f"ALTER USER {account} IDENTIFIED BY '{password}';\n"
        f"GRANT ALL PRIVILEGES ON `{database}`.* TO {account};\n"
    )


def new_password() -> str:
    return secrets.token_hex(24)


def programs() -> list[Program]:
    """MariaDB and slurmdbd; low priorities, so supervisord stops them after slurmctld, the store last."""
    return [
        Program(
            "mariadb",
            mariadb_argv(),
            str(DB_PORT),
            user=MARIADB_ACCOUNT,
            directory=str(DB_DIR),
            stopwait=60,
            priority=100,
        ),
        Program("slurmdbd", ["/usr/sbin/slurmdbd", "-D"], str(SLURMDBD_PORT), priority=200),
    ]


def ensure_files(platform: Platform) -> bool:
    """MariaDB's data folder, the database password and slurmdbd.conf; True if slurmdbd must restart."""
    DB_DIR.mkdir(mode=0o750, exist_ok=True)
    shutil.chown(DB_DIR, MARIADB_ACCOUNT, MARIADB_ACCOUNT)
    DB_DIR.chmod(0o750)
    if not (DB_DATA / "mysql").is_dir():
        say("creating the accounting database's MariaDB data folder")
        run(
            [
                "/usr/bin/mariadb-install-db",
                "--no-defaults",
                f"--datadir={DB_DATA}",
                f"--user={MARIADB_ACCOUNT}",
                "--auth-root-authentication-method=socket",  # root reaches it through the socket only
                "--skip-test-db",
                "--skip-name-resolve",
            ],
            timeout=120,
        )
    if not DB_PASSWORD.exists():
        write_if_changed(DB_PASSWORD, new_password() + "\n", mode=0o600)
    password = DB_PASSWORD.read_text().strip()
    DB_PASSWORD.chmod(0o600)
    # SlurmUser is root: slurmdbd refuses a config that others may read, as it holds the password
    return write_if_changed(SLURMDBD_CONF, slurmdbd_conf(password, database_of(platform)), mode=0o600)


def database_answers() -> bool:
    return (
        run(["/usr/bin/mariadb-admin", "--no-defaults", f"--socket={DB_SOCKET}", "ping"], check=False).returncode == 0
    )


def ensure_database_user(platform: Platform) -> None:
    run(MARIADB_CLIENT, input=database_user_sql(DB_PASSWORD.read_text().strip(), database_of(platform)), timeout=30)


def clusters() -> dict[str, str] | None:
    """Cluster name -> its controller's port as slurmdbd knows them ("0" until slurmctld registered); None: no answer."""
    out = run(
        ["sacctmgr", "--immediate", "--noheader", "--parsable2", "list", "cluster", "format=Cluster,ControlPort"],
        check=False,
        timeout=20,
    )
    if out.returncode != 0:
        return None
    return dict(line.split("|", 1) for line in out.stdout.splitlines() if "|" in line)


def slurmdbd_answers() -> bool:
    return clusters() is not None


def cluster_registered() -> bool:
    """slurmctld has registered with slurmdbd: the cluster is in its database, with the controller's port.

    No `sacctmgr add cluster` first: Slurm 22.05's slurmctld adds its
    cluster to an empty database itself when it registers (tried: a dropped
    database, then slurmctld alone, and the cluster and its root association
    were there).  The demo users' associations come next
    (deploy/dev/associations.py): slurm.conf enforces them.
    """
    return (clusters() or {}).get(CLUSTER_NAME, "0") not in ("", "0")
