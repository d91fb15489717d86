"""What the hub and the session job agree on; imports nothing of either side.

The hub side (spawner/hub, portal) writes these names and paths, the job side
(spawner/job) and the Jupyter side (spawner/jupyter) read them.  Standard
library only, so importing it on a compute node pulls in no hub code.
"""

from __future__ import annotations

import hashlib
import hmac
from pathlib import Path

# The job's environment variable holding the session spec (JSON: storage links
# and kernels from the admin config), written by the hub, read by spawner/job/session/start.py.
SESSION_VAR = "DSPORTAL_SESSION"

# The Python 3 kernel's python (the user's layer of their own packages), which the session's start
# (spawner/job/session/start.py) hands its server; the user's apps run with it (spawner/jupyter/apps/).
KERNEL_PYTHON_VAR = "DSPORTAL_KERNEL_PYTHON"

# The port callback, under the hub's API URL (JUPYTERHUB_API_URL ends in /hub/api):
# the job POSTs {"port": N} there with the session's own token.
PORT_CALLBACK = "/dsportal/port"

# The session's server has exited: its port keeper (spawner/jupyter/session/keeper.py) POSTs here with the
# session's token; the hub removes the route before it answers, and only then is the port released.
ENDED_CALLBACK = "/dsportal/ended"

# An extension of the session's time, asked by the session's server with its own
# token: POST {JUPYTERHUB_API_URL}EXTEND_PATH (the hub decides and runs Slurm).
EXTEND_PATH = "/dsportal/session/extend"

# The session's server reports what it used so far (spawner/usage.py's tally) with its own token:
# POST {JUPYTERHUB_API_URL}USAGE_PATH; the hub keeps the last report for the ended session's summary.
USAGE_PATH = "/dsportal/session/usage"

# A share ended: the hub hands the session a new token (the old one is dead), POSTing {"token": NEW} to the
# session's server at its own address, {base_url}TOKEN_PUSH_PATH.  The session takes it only once the hub has
# answered GET {JUPYTERHUB_API_URL}TOKEN_CHECK_PATH, asked with that token, with {"user", "server"} of this very
# session: only the current token of a running session gets that answer (spawner/hub/sharing/handover.py).
TOKEN_PUSH_PATH = "dsportal/session/token"
# The session's server carries its kernels out for the session that continues it, asked by the hub's continue API
# at the server's own address (spawner/hub/continuation/service.py, spawner/jupyter/continuation/handlers.py).
CONTINUATION_CARRY_PATH = "dsportal/continuation/carry"
TOKEN_CHECK_PATH = "/dsportal/session/token"
# Each offer carries TOKEN_OFFER_HEADER: comma-separated offer_proof(digest, the offered token), one for each token
# the session may hold (the SHA-256 hex digests the hub keeps: the one it took last, and each one handed since that
# may have arrived unconfirmed), at most MAX_OFFER_PROOFS.  Only whoever held the session's token (the hub, its
# owner's code, its guests) can make one, so the session refuses a stranger's offer by itself, without a question
# to the hub: a stranger's flood of offers through a running session once made the hub answer ~130 a second.
TOKEN_OFFER_HEADER = "X-DSPortal-Offer-Proof"
MAX_OFFER_PROOFS = 4

# Slurm's advance warning before the time limit (sbatch --signal=B:USR2@N): the
# session's server then has JupyterLab save every open document.
WARNING_SIGNAL_NAME = "USR2"

# The session's server proves it is the session's: GET {base_url}READY_PATH?nonce=N answers
# {"proof": readiness_proof(its API token, N)}; anything else on that port cannot.
READY_PATH = "dsportal/ready"


# Each app of a session has an origin of its own, apart from the session's Jupyter server (whose origin holds
# its login and API) and from the session's other apps: https://apps--RANDOM.<hub.subdomain_host's name>:PORT.
# The session asks the hub for it when the app starts: POST {JUPYTERHUB_API_URL}APPS_ROUTES_PATH {"app": ID} with
# its own token -> {"origin": ...}; the hub draws the label and routes it (spawner/hub/apps/), the session serves
# the app there (spawner/jupyter/apps/origin.py).
APPS_ROUTES_PATH = "/dsportal/apps/routes"
APPS_LABEL_PREFIX = "apps--"
APPS_LABEL_PATTERN = r"apps--[0-9a-f]{24}"


# Container runtimes a kernel may name (kernels.containers[].runtime) -> the command that runs images.
RUNTIME_COMMANDS = {"apptainer": "apptainer", "singularity": "singularity", "charliecloud": "ch-run"}


def readiness_proof(token: str, nonce: str) -> str:
    return hmac.new(token.encode(), f"dsportal-ready:{nonce}".encode(), hashlib.sha256).hexdigest()


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def offer_proof(held_digest: str, offered: str) -> str:
    """A proof a token offer carries (TOKEN_OFFER_HEADER): keyed by the digest of a token the session may hold."""
    return hmac.new(held_digest.encode(), f"dsportal-offer:{offered}".encode(), hashlib.sha256).hexdigest()


def offer_proofs(held_digests: list[str], offered: str) -> str:
    """TOKEN_OFFER_HEADER's value: a proof for each digest (empty ones left out), the last MAX_OFFER_PROOFS."""
    return ",".join(offer_proof(d, offered) for d in [d for d in held_digests if d][-MAX_OFFER_PROOFS:])


_PACKAGE = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """The installed folder `name` ("templates": hub pages, "notebooks": framework notebooks).

    A wheel carries them as ``spawner/_data/<name>``; a source checkout has
    them at the top of the repository.
    """
    for candidate in (_PACKAGE / "_data" / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"DS Portal data folder {name!r} is missing from the installation")


# --- notebooks and scripts run as jobs (the hub submits, spawner/job/runs/runner.py runs) ---
# The runner's lines in the job's log that the hub reads to say how a run ended.
RUN_MARK = "dsportal-run:"


def run_output(output_dir: str, path: str, job_id: str) -> str:
    """Where a notebook job writes its output notebook: OUTPUT_DIR/STEM-JOBID.ipynb."""
    stem = Path(path).name.rsplit(".", 1)[0] or "notebook"
    return f"{output_dir.rstrip('/')}/{stem}-{job_id}.ipynb"


def sweep_folder(output_dir: str, path: str, array_id: str) -> str:
    """Where a sweep's tasks write: OUTPUT_DIR/STEM-ARRAYID/ (task-N.ipynb, task-N.json)."""
    stem = Path(path).name.rsplit(".", 1)[0] or "notebook"
    return f"{output_dir.rstrip('/')}/{stem}-{array_id}"


def sweep_output(folder: str, task: int) -> str:
    """A sweep task's output notebook (papermill's, kept when the task fails or times out)."""
    return f"{folder}/task-{task}.ipynb"


def sweep_results(folder: str, task: int) -> str:
    """A sweep task's results: one JSON line the runner writes, {"task": N, "results": {...}} or {"task": N, "error": ...}."""
    return f"{folder}/task-{task}.json"


SWEEP_RESULTS_BYTES = 4096  # the most of one task's results the runner writes and the hub reads


def sweep_log(home: str) -> str:
    """Slurm's output file of each task of a sweep (%A = the array's job id, %a = the task)."""
    return f"{home.rstrip('/')}/.dsportal-job-%A_%a.log"


def run_log(home: str) -> str:
    """Slurm's output file of a job run from the portal (%j = job id), in the user's home."""
    return f"{home.rstrip('/')}/.dsportal-job-%j.log"


# --- receipts: what a session or run ran with (the job writes it, the hub reads it as the user) ---
RECEIPT_ENVIRONMENT_BYTES = 256 * 1024  # the most of one job's environment the job writes and the hub reads


def receipt_environment(home: str, job_id: str) -> str:
    """Where a job (a session or a run) writes what it ran with: a private folder of the user's home."""
    return f"{home.rstrip('/')}/.dsportal/receipts/{job_id}.environment.json"
