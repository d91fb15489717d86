"""A mock Slurm for the spawner's tests and the hub tests: `sbatch`, `squeue`, `scancel`, `sinfo`, `sacct`,
`sacctmgr` and `sshare` (the accounts' answers set with `MockSlurm.set_accounting`; `sacctmgr show config`'s
PrivateData and the hub account's rank set with `MockSlurm.set_private`: squeue then lists only the jobs of
that account, as Slurm does).

Job arrays (`sbatch --array=0-N%M`, a sweep) are one entry of the table; its
tasks are waiting until `MockSlurm.set_tasks` starts (or ends) some.  squeue
and sacct list them as Slurm does: each started task as `178_4`, the tasks not
yet started as one line `178_[5-999%4]` (array_lines).

`MockSlurm(root)` writes small executables into a temp bin folder that run
`python -m tests.support.mockslurm CMD STATE ARGS...`; they keep a job table in a temp state folder, so the
spawner's real subprocess path runs.  A `sudo` stand-in completes the set: it
accepts exactly the spawner's form (`-n --preserve-env=A,B -u USER -- cmd`),
passes on only the named variables (as sudo's env_reset does) and records
the user, since tests cannot switch to real unix accounts.  It runs the real
command: `head -v -c N -- paths` (a sweep's results) and `tail` read a temp
home's files as the hub would.

Failures are set per command with `MockSlurm.fail(cmd, mode)`:
  unreachable  stderr "Unable to contact slurm controller", exit 1
  hang         never answers (sleeps)
  error        the given stderr, exit 1
  late         (sbatch) the job is queued, but the command hangs: an sbatch that timed out yet ran
  slow         (sbatch) the job is queued, and the command answers 2 s later: a busy slurmctld
  garbage      (squeue) the listing with every line cut short (a portal job's id, then half a line)
"""

from __future__ import annotations

import fcntl
import json
import os
import pwd
import shlex
import shutil
import sys
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

from spawner.slurmaccounting import USAGE_FIELDS

UNREACHABLE = {
    "sinfo": "slurm_load_partitions: Unable to contact slurm controller (connect failure)",
    "sbatch": "sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)",
    "squeue": "slurm_load_jobs error: Unable to contact slurm controller (connect failure)",
    "scancel": "scancel: error: Kill job error: Unable to contact slurm controller (connect failure)",
    "extend": "Slurm did not answer (squeue: Unable to contact slurm controller); try again in a minute.",
}


@contextmanager
def _table(state: Path):
    """The job table, locked for the whole read-modify-write."""
    with open(state / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        path = state / "jobs.json"
        data = json.loads(path.read_text()) if path.exists() else {"next_id": 100, "jobs": {}}
        yield data
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1))
        os.replace(tmp, path)  # readers never see a half-written table


def _record(state: Path, entry: dict) -> None:
    with open(state / "calls.jsonl", "a") as f:
        f.write(json.dumps(entry) + "\n")


def _failure_entry(state: Path, cmd: str) -> dict | None:
    """What MockSlurm.fail set for `cmd`: {"mode", "stderr"}, or None."""
    path = state / "fail.json"
    return json.loads(path.read_text()).get(cmd) if path.exists() else None


def _failure(state: Path, cmd: str) -> int | None:
    mode = _failure_entry(state, cmd)
    if not mode:
        return None
    if mode["mode"] in ("late", "slow", "garbage"):
        return None  # the command does its work; sbatch and squeue act on the mode themselves
    if mode["mode"] == "hang":
        time.sleep(3600)
    sys.stderr.write((mode.get("stderr") or UNREACHABLE[cmd]) + "\n")
    return 1


def _options(argv: list[str]) -> dict[str, str]:
    opts = {}
    for arg in argv:
        if arg.startswith("--"):
            key, _, value = arg[2:].partition("=")
            opts[key] = value
    return opts


# spawner/slurmvocab.py's (every listing of the hub passes --all: the format tells them apart)
ALL_JOBS_FORMAT = "%i|%u|%T|%P|%D|%N|%M|%L|%l|%V|%S|%r"
TEST_ONLY_START = "2026-11-22T12:00:00"
# node, partition, state, GPUs, GPUs used, idle cores, cores, memory MiB, memory used MiB
NODES = [
    ["gpu01", "sxm2", "idle", 4, 0, 40, 40, 393216, 0],
    ["gpu02", "sxm2", "mix", 4, 3, 16, 40, 393216, 147456],
    ["gpu03", "pcie", "idle", 2, 0, 40, 40, 393216, 0],
]


def array_ids(spec: str) -> tuple[list[int], int]:
    """sbatch's --array value -> (its task numbers, the most at once; 0: no limit).  '0-999%8' -> ([0..999], 8)."""
    ranges, _, limit = spec.partition("%")
    ids: list[int] = []
    for part in ranges.split(","):
        first, _, last = part.partition("-")
        ids.extend(range(int(first), int(last or first) + 1))
    return sorted(set(ids)), int(limit or 0)


def compact(ids: list[int]) -> str:
    """Task numbers as Slurm writes them in a listing: [0, 1, 2, 5, 7, 8] -> '0-2,5,7-8'."""
    parts: list[str] = []
    ids = sorted(ids)
    start = 0
    for i, task in enumerate(ids):
        if i + 1 == len(ids) or ids[i + 1] != task + 1:
            parts.append(f"{ids[start]}-{task}" if task != ids[start] else str(task))
            start = i + 1
    return ",".join(parts)


def array_lines(job_id: str, job: dict) -> list[tuple[str, dict]]:
    """What squeue and sacct list of a job: itself; for an array, the tasks not yet started in one line
    (`178_[5-999%4]`, with the array's own state and reason; `178_999` when one is left), then each started task
    (`178_4`) with its own fields over the array's."""
    array = job.get("array")
    if array is None:
        return [(job_id, job)]
    started = job.get("tasks", {})
    waiting = [t for t in array["ids"] if str(t) not in started]
    lines = []
    if len(waiting) == 1:
        lines.append((f"{job_id}_{waiting[0]}", job))
    elif waiting:
        limit = f"%{array['at_once']}" if array["at_once"] else ""
        lines.append((f"{job_id}_[{compact(waiting)}{limit}]", job))
    for task in sorted(started, key=int):
        lines.append((f"{job_id}_{task}", {**job, **started[task]}))
    return lines


def _listing(jobs: dict) -> list[tuple[str, dict]]:
    """Every line squeue or sacct lists, by job id (an array's tasks after its id)."""
    return [line for job_id in sorted(jobs, key=int) for line in array_lines(job_id, jobs[job_id])]


def sbatch(state: Path, argv: list[str]) -> int:
    script = sys.stdin.read()
    opts = _options(argv)
    submission = uuid.uuid4().hex  # ties the job to this call's record (its environment)
    _record(state, {"cmd": "sbatch", "argv": argv, "script": script, "env": dict(os.environ), "submission": submission})
    failed = _failure(state, "sbatch")
    if failed:
        return failed
    if "test-only" in opts:  # Slurm's answer on stderr, nothing queued
        sys.stderr.write(
            f"sbatch: Job 99999 to start at {TEST_ONLY_START} using 8 processors on nodes gpu01 "
            f"in partition {opts.get('partition')}\n"
        )
        return 0
    with _table(state) as t:
        job_id = str(t["next_id"])
        t["next_id"] += 1
        t["jobs"][job_id] = {
            "user": os.environ.get("MOCKSLURM_USER", ""),
            "name": opts.get("job-name", ""),
            "state": "PENDING",
            "reason": "None",
            "node": "",
            "options": opts,
            "submission": submission,
        }
        if "array" in opts:
            ids, at_once = array_ids(opts["array"])
            t["jobs"][job_id].update(array={"ids": ids, "at_once": at_once}, tasks={})
    if _mode(state, "sbatch") == "late":
        time.sleep(3600)
    if _mode(state, "sbatch") == "slow":
        time.sleep(2)
    print(job_id if "parsable" in opts else f"Submitted batch job {job_id}")
    return 0


def _mode(state: Path, cmd: str) -> str | None:
    entry = _failure_entry(state, cmd)
    return entry["mode"] if entry else None


def squeue(state: Path, argv: list[str]) -> int:
    opts = _options(argv)
    _record(state, {"cmd": "squeue", "argv": argv})
    failed = _failure(state, "squeue")
    if failed:
        return failed
    names = set(opts.get("name", "").split(",")) - {""}
    with _table(state) as t:
        listing = _listing(t["jobs"])
    if _hides_jobs(_private(state)):  # as slurmctld: an account without the rank sees its own jobs only
        me = pwd.getpwuid(os.getuid()).pw_name
        listing = [(job_id, job) for job_id, job in listing if job["user"] == me]
    if opts.get("format") == "%i":  # ids only: a partition's pending jobs in priority order (here: submission
        # order), or the jobs of a name, in any state
        for job_id, job in listing:
            if opts.get("states") == "PENDING" and job["state"] != "PENDING":
                continue
            if "partition" in opts and job["options"].get("partition") != opts["partition"]:
                continue
            if not names or job["name"] in names:
                print(job_id)
        return 0
    if opts.get("format") == "%i|%T|%b|%k":  # a user's jobs of a name with their GRES and comment (the limits')
        for job_id, job in listing:
            if job["user"] == opts.get("user") and job["name"] in names:
                gres = job["options"].get("gres")
                comment = job.get("comment", job["options"].get("comment", ""))
                print(f"{job_id}|{job['state']}|{'gres:' + gres if gres else 'N/A'}|{comment}")
        return 0
    if opts.get("format") == ALL_JOBS_FORMAT:  # every user's jobs (the jobs panel's shared listing)
        for job_id, job in listing:
            o = job["options"]
            print(
                f"{job_id}|{job['user']}|{job['state']}|{o.get('partition', '')}|{o.get('nodes', '1')}|"
                f"{job['node'] or '(null)'}|0:00|{o.get('time', '1:00:00')}|{o.get('time', '1:00:00')}|"
                f"2026-11-22T08:00:00|{job.get('start', 'N/A')}|{job['reason']}"
            )
        return 0
    garbage = _mode(state, "squeue") == "garbage"
    for job_id, job in listing:
        if not names or job["name"] in names:
            line = (
                f"{job_id}|{job['user']}|{job['state']}|{job['node'] or '(null)'}|{job.get('start', 'N/A')}|"
                f"{job.get('end', 'N/A')}|{job['reason']}"
            )
            print(line[: len(job_id) + 1 + len(line[len(job_id) + 1 :]) // 2] if garbage else line)
    return 0


def sinfo(state: Path, argv: list[str]) -> int:
    _record(state, {"cmd": "sinfo", "argv": argv})
    failed = _failure(state, "sinfo")
    if failed:
        return failed
    path = state / "nodes.json"
    for node, part, st, gpus, used, idle, cpus, mem, mem_used in (
        json.loads(path.read_text()) if path.exists() else NODES
    ):
        print(f"{node}|{part}|{st}|gpu:{gpus}|gpu:{used}(IDX:N/A)|{cpus - idle}/{idle}/0/{cpus}|{mem_used}|{mem}|")
    return 0


def sacct(state: Path, argv: list[str]) -> int:
    """Slurm's accounting of every job in the table (ACCOUNTING_FIELDS, --parsable2)."""
    _record(state, {"cmd": "sacct", "argv": argv})
    failed = _failure(state, "sacct")
    if failed:
        return failed
    with _table(state) as t:
        jobs = t["jobs"]
    if _options(argv).get("format") == ",".join(USAGE_FIELDS):
        _usage_lines(jobs)
        return 0
    for job_id, job in _listing(jobs):
        o = job["options"]
        print(
            f"{job_id}|{job['user']}|{o.get('partition', '')}|{job['state']}|0:0|2026-11-22T08:00:00|"
            f"2026-11-22T08:00:01|Unknown|00:00:10|{o.get('nodes', '1')}|{job['node'] or 'None assigned'}|"
            f"{o.get('time', '01:00:00')}"
        )
    return 0


def _usage_lines(jobs: dict) -> None:
    """The usage listing (USAGE_FIELDS): each job that ran, with its allocation and one step; every job started
    at the same moment and ran an hour, used a quarter of its cores and 1 GiB."""
    for job_id in sorted(jobs, key=int):
        job = jobs[job_id]
        if job["state"] == "PENDING":
            continue
        o = job["options"]
        cpus = int(o.get("cpus-per-task") or 1)
        *kind, gpus = (o.get("gres", "").removeprefix("gpu:") or "0").split(":")
        typed = f"gres/gpu:{kind[0]}={gpus}," if kind else ""
        end = "2026-11-22T09:00:00" if job["state"] != "RUNNING" else "Unknown"
        cpu = f"{cpus * 15:02d}:00.000"
        print(
            f"{job_id}|{job['user']}|{o.get('partition', '')}|{job['state']}|2026-11-22T08:00:00|{end}|3600|{cpu}|"
            f"billing={cpus},cpu={cpus},gres/gpu={gpus},{typed}mem={o.get('mem', '1G')},node=1||{o.get('account', '')}"
        )
        print(f"{job_id}.batch|||{job['state']}|2026-11-22T08:00:00|{end}|3600|{cpu}|cpu={cpus}|1048576K|")


def scancel(state: Path, argv: list[str]) -> int:
    _record(state, {"cmd": "scancel", "argv": argv, "user": os.environ.get("MOCKSLURM_USER", "")})
    failed = _failure(state, "scancel")
    if failed:
        return failed
    job_id = argv[-1]
    array, _, task = job_id.partition("_")  # 178_4: one task of an array
    with _table(state) as t:
        job = t["jobs"].get(array if task else job_id)
        if job is None or (task and (not task.isdigit() or int(task) not in job.get("array", {}).get("ids", []))):
            sys.stderr.write(f"scancel: error: Kill job error on job id {job_id}: Invalid job id specified\n")
            return 1
        if job["user"] != os.environ.get("MOCKSLURM_USER"):
            sys.stderr.write(f"scancel: error: Kill job error on job id {job_id}: Access/permission denied\n")
            return 1
        if task:  # a waiting task cancelled alone is listed on its own from then on
            _cancel(job["tasks"].setdefault(task, {"state": "PENDING"}))
            return 0
        _cancel(job)
        for started in job.get("tasks", {}).values():
            _cancel(started)
    return 0


def _cancel(job: dict) -> None:
    if job["state"] in ("PENDING", "RUNNING"):
        # a running job passes through COMPLETING, as in Slurm
        job["state"] = "COMPLETING" if job["state"] == "RUNNING" else "CANCELLED"
        job["reason"] = "None"
        job["completing_polls"] = 2


def sudo(state: Path, argv: list[str]) -> int:
    keep: list[str] = []
    user = None
    rest = list(argv)
    while rest and rest[0] != "--":
        arg = rest.pop(0)
        if arg == "-n":
            continue
        if arg.startswith("--preserve-env="):
            keep = arg.split("=", 1)[1].split(",")
        elif arg == "-u":
            user = rest.pop(0)
        else:
            sys.stderr.write(f"mock sudo: unexpected argument {arg!r}\n")
            return 2
    if user is None and rest[1:2] and os.path.basename(rest[1]) == "dsportal-extend-session":
        user = "root"  # the one command the hub runs as root (deploy/sudoers.d/dsportal)
    if not rest or user is None:
        sys.stderr.write("mock sudo: usage: sudo -n [--preserve-env=A,B] -u USER -- command...\n")
        return 2
    command = rest[1:]
    env = {k: os.environ[k] for k in keep if k in os.environ}
    env.update(PATH="/usr/bin:/bin", MOCKSLURM_USER=user)
    _record(state, {"cmd": "sudo", "user": user, "argv": command, "kept": keep})
    program = command[0] if os.path.isabs(command[0]) else shutil.which(command[0], path=env["PATH"])
    os.execve(program, command, env)
    return 127


def advance(state: Path) -> None:
    """Jobs left COMPLETING move on to CANCELLED after a few queries."""
    with _table(state) as t:
        tasks = [task for job in t["jobs"].values() for task in job.get("tasks", {}).values()]
        for job in [*t["jobs"].values(), *tasks]:
            if job.get("state") == "COMPLETING":
                job["completing_polls"] -= 1
                if job["completing_polls"] <= 0:
                    job["state"] = "CANCELLED"


def extend(state: Path, argv: list[str]) -> int:
    """The root helper's stand-in (spawner/root/extend.py): JOB MINUTES; a running job's limit and end move."""
    _record(state, {"cmd": "extend", "argv": argv, "user": os.environ.get("MOCKSLURM_USER", "")})
    failed = _failure(state, "extend")
    if failed:
        return failed
    job_id, minutes = argv
    with _table(state) as t:
        job = t["jobs"].get(job_id)
        if job is None or job["state"] != "RUNNING":
            sys.stderr.write(f"Job {job_id} is not running: only a running session is extended.\n")
            return 3
        job["limit"] = int(minutes)
        job["end"] = f"2026-11-22T{8 + int(minutes) // 60:02d}:{int(minutes) % 60:02d}:00"
    print(f"Job {job_id}: time limit now {minutes} minutes.")
    return 0


# sacctmgr's and sshare's answers unless a test sets its own: alice in vision and nlp, bob in vision
ACCOUNTING = {
    "associations": "alice|vision|normal,short\nalice|nlp|normal\nbob|vision|normal,short\n",
    "users": "alice|vision\nbob|vision\n",
    "qos": "normal|\nshort|01:00:00\n",
    "sshare": " nlp|||gres/gpu=60000|cpu=0,gres/gpu=600\n  nlp|alice|0.500000||cpu=0,gres/gpu=600\n"
    " vision||||cpu=0,gres/gpu=0\n  vision|alice|0.750000||cpu=0,gres/gpu=0\n  vision|bob|1.000000||cpu=0,gres/gpu=0\n",
}


def _accounting(state: Path, cmd: str, what: str) -> int:
    _record(state, {"cmd": cmd, "what": what})
    failed = _failure(state, cmd)
    if failed:
        return failed
    path = state / "accounting.json"
    answers = {**ACCOUNTING, **(json.loads(path.read_text()) if path.exists() else {})}
    sys.stdout.write(answers[what])
    return 0


def _private(state: Path) -> dict:
    path = state / "private.json"
    return json.loads(path.read_text()) if path.exists() else {"flags": "none", "rank": "None|"}


def _hides_jobs(private: dict) -> bool:
    """Slurm's rule: PrivateData=jobs hides other users' jobs unless the account is an Operator, an
    Administrator or a coordinator of their accounts (here: of any account, as the test sets it)."""
    level, _, coordinated = private["rank"].partition("|")
    return "jobs" in private["flags"].split(",") and not (level in ("Operator", "Administrator") or coordinated)


def sacctmgr(state: Path, argv: list[str]) -> int:
    """`sacctmgr --noheader --parsable2 show associations|users|qos format=...`, and `show user NAME withcoord`
    (the hub account's AdminLevel and coordinated accounts)."""
    if (argv[-2:] == ["show", "config"] or "withcoord" in argv) and (failed := _failure(state, "sacctmgr")):
        return failed
    if argv[-2:] == ["show", "config"]:  # slurm.conf's PrivateData, then slurmdbd.conf's
        _record(state, {"cmd": "sacctmgr", "what": "config"})
        flags = _private(state)["flags"]
        print(f"PrivateData            = {flags}\n\nSlurmDBD configuration:\nPrivateData            = {flags}")
        return 0
    if "withcoord" in argv:
        user = argv[argv.index("user") + 1]
        _record(state, {"cmd": "sacctmgr", "what": "privilege"})
        print(f"{user}|{_private(state)['rank']}")
        return 0
    return _accounting(state, "sacctmgr", "users" if "onlydefaults" in argv else argv[argv.index("show") + 1])


def sshare(state: Path, argv: list[str]) -> int:
    return _accounting(state, "sshare", "sshare")


COMMANDS = {
    "sacctmgr": sacctmgr,
    "sshare": sshare,
    "sbatch": sbatch,
    "squeue": squeue,
    "scancel": scancel,
    "sinfo": sinfo,
    "sacct": sacct,
    "sudo": sudo,
    "dsportal-extend-session": extend,
}


def main(cmd: str, state_dir: str, argv: list[str]) -> int:
    state = Path(state_dir)
    if cmd == "squeue":
        advance(state)
    return COMMANDS[cmd](state, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3:]))


# --- the test side ---------------------------------------------------------------------
ROOT = Path(__file__).resolve().parents[2]


class MockSlurm:
    """The fake commands in `root/bin` and their job table in `root/state`."""

    def __init__(self, root: Path):
        self.bin = root / "bin"
        self.state = root / "state"
        self.bin.mkdir(parents=True)
        self.state.mkdir(parents=True)
        for cmd in COMMANDS:
            path = self.bin / cmd
            # a stand-in command; the spawner runs it as it would run Slurm's
            path.write_text(
                f"#!/bin/sh\nPYTHONPATH={shlex.quote(str(ROOT))} exec {shlex.quote(sys.executable)} "
                f'-m tests.support.mockslurm {cmd} {shlex.quote(str(self.state))} "$@"\n'
            )
            path.chmod(0o755)

    def path(self, cmd: str) -> str:
        return str(self.bin / cmd)

    def jobs(self) -> dict:
        with _table(self.state) as table:  # the same lock the fake commands take
            return json.loads(json.dumps(table["jobs"]))

    def set_job(self, job_id: str, **fields) -> None:
        with _table(self.state) as table:
            table["jobs"][job_id].update(fields)

    def set_tasks(self, job_id: str, tasks: dict[int, dict]) -> None:
        """Fields of an array's tasks (state, node, reason, start...) by task number: a task named here has
        started; the others wait, listed in one line."""
        with _table(self.state) as table:
            started = table["jobs"][job_id]["tasks"]
            for task, fields in tasks.items():
                started.setdefault(str(task), {}).update(fields)

    def set_nodes(self, nodes: list[list]) -> None:
        """What sinfo shows (rows as NODES)."""
        (self.state / "nodes.json").write_text(json.dumps(nodes))

    def set_accounting(self, **answers: str) -> None:
        """sacctmgr's and sshare's answers (keys of ACCOUNTING) instead of the defaults."""
        (self.state / "accounting.json").write_text(json.dumps(answers))

    def set_private(self, flags: str, rank: str = "None|") -> None:
        """slurm.conf's PrivateData ('jobs,usage') and the hub account's 'AdminLevel|coordinated,accounts'; with
        jobs private and no rank that sees them, squeue lists none of the other users' jobs."""
        (self.state / "private.json").write_text(json.dumps({"flags": flags, "rank": rank}))

    def purge(self, job_id: str) -> None:
        with _table(self.state) as table:
            del table["jobs"][job_id]

    def fail(self, cmd: str, mode: str, stderr: str | None = None) -> None:
        path = self.state / "fail.json"
        modes = json.loads(path.read_text()) if path.exists() else {}
        modes[cmd] = {"mode": mode, "stderr": stderr}
        path.write_text(json.dumps(modes))

    def heal(self) -> None:
        (self.state / "fail.json").unlink(missing_ok=True)

    def calls(self, cmd: str | None = None) -> list[dict]:
        path = self.state / "calls.jsonl"
        entries = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
        return [e for e in entries if cmd is None or e["cmd"] == cmd]


def config_data(mock: MockSlurm, command_timeout: float = 20) -> dict:
    """A valid admin config (as data) whose Slurm commands are `mock`'s.

    `command_timeout` is the portal's default: the test workers share two cores with the dev cluster's tests, and
    a mock command (a Python start-up, 0.12 s idle) once took over the 3 s this was, failing a start.  A test of
    a hung Slurm passes a short one."""
    return {
        "hub": {"admin_users": ["carol"]},
        "ldap": {"bind_dn_template": "uid={username},ou=people,dc=example,dc=org"},
        "slurm": {
            "partitions": [
                {"name": "sxm2", "max_gpus": 4, "default": True, "display_name": "V100 SXM2"},
                {"name": "pcie", "max_gpus": 2},
            ],
            "max_hours": 12,
            "account": "ds",
            "extra_sbatch": ["--constraint=v100"],
            "sbatch": mock.path("sbatch"),
            "squeue": mock.path("squeue"),
            "scancel": mock.path("scancel"),
            "sinfo": mock.path("sinfo"),
            "sacct": mock.path("sacct"),
            "sacctmgr": mock.path("sacctmgr"),
            "sshare": mock.path("sshare"),
            "sudo": mock.path("sudo"),
            "extend_command": mock.path("dsportal-extend-session"),
            "allow_extend": True,
            "extend_max_hours": 12,
            "command_timeout": command_timeout,
        },
        "environment": {"prefix": "/opt/dsportal/venv", "storage": {"isilon": "/mnt/isilon"}},
    }


def fake_passwd(name: str, home: Path) -> pwd.struct_passwd:
    """A unix account entry for `name` with `home` (the spawner's getpwnam seam)."""
    return pwd.struct_passwd((name, "x", 5001, 5001, name, str(home), "/bin/bash"))


def spawner_for(name: str, config_file: Path, home: Path, **traits):
    """A SlurmGPUSpawner for user `name` outside a hub: the portal config's (mock) Slurm, a fake account."""
    from types import SimpleNamespace

    from jupyterhub import orm
    from jupyterhub.objects import Hub

    from spawner.hub.session.spawner import SlurmGPUSpawner
    from spawner.hub.wiring import routes

    routes.install()  # as the hub's config does (spawner/hub/wiring/hubconfig.py): a start refuses to run without them

    async def no_auth_state():
        return None

    # the user's own row in a hub database of its own (the user's record, spawner/hub/session/userrecord.py)
    db = orm.new_session_factory("sqlite:///:memory:")()
    orm_user = orm.User(name=name)
    db.add(orm_user)
    db.commit()
    user = SimpleNamespace(
        name=name,
        db=db,
        orm_user=orm_user,
        url=f"/user/{name}/",
        escaped_name=name,
        base_url="/",
        prefix=f"/user/{name}/",
        spawners={},
        settings={},
        get_auth_state=no_auth_state,
    )
    spawner = SlurmGPUSpawner(
        user=user,
        hub=Hub(ip="10.0.0.1", port=8081, base_url="/hub/"),
        api_token=f"{name}-server-token",
        config_file=str(config_file),
        **traits,
    )
    spawner.getpwnam = lambda account: fake_passwd(account, home)
    return spawner
