"""Session start on the node: kernelspecs, ~/templates, storage links, module and container kernels."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from portal.config import parse_config
from spawner.job.kernels.kernelspecs import NodeProbe, build_kernelspecs, write_kernelspecs
from spawner.job.kernels.pythonkernel import standalone_code
from spawner.job.session.homefolder import link_storage, sync_templates
from spawner.job.session.start import prepare
from tests.support.http import wait_until

LAUNCHER = standalone_code()  # ipykernel with its subprocess pipe on a Unix socket (pythonkernel.py)

LMOD = "/usr/share/lmod/lmod/libexec/lmod"
RUNTIME = "/tmp/dsportal-alice-7-x/runtime"  # the session's private folder of kernel sockets
EXAMPLE = {
    "ldap": {"bind_dn_template": "uid={username},dc=x"},
    "environment": {"storage": {"isilon": "/mnt/isilon"}},
    "kernels": {
        "modulepath": ["/opt/modulefiles"],
        "modules": [{"name": "torch-mods", "display_name": "PyTorch (modules)", "load": ["cuda/12.1", "pytorch/2.1"]}],
        "containers": [
            {
                "name": "ngc-pytorch",
                "display_name": "PyTorch 24.01 (NGC)",
                "image": "/images/pytorch_24.01-py3.sif",
                "runtime": "apptainer",
                "binds": ["/scratch"],
            }
        ],
    },
}


def kernels_of(data: dict) -> tuple[dict, dict]:
    cfg = parse_config(data)
    return cfg.kernels.model_dump(), cfg.environment.storage


def probe(**overrides) -> NodeProbe:
    base = dict(
        which=lambda name: f"/usr/bin/{name}",
        exists=lambda path: True,
        r_has_irkernel=lambda r: True,
        missing_modules=lambda cmd, path, names: [],
    )
    return NodeProbe(**{**base, **overrides})


def test_kernelspecs_for_the_example_config():
    kernels, storage = kernels_of(EXAMPLE)
    specs, notes = build_kernelspecs(
        kernels, storage, "/home/alice", "/opt/dsportal/venv/bin/python", "/opt/dsportal/venv/bin", probe(), RUNTIME
    )
    assert notes == []
    assert specs == {
        "python3": {
            "argv": [
                "/opt/dsportal/venv/bin/python",
                "-P",
                "-m",
                "spawner.job.kernels.pythonkernel",
                "-f",
                "{connection_file}",
            ],
            "display_name": "Python 3",
            "language": "python",
            "metadata": {"debugger": False},
        },
        "ir": {
            "argv": ["/usr/bin/R", "--slave", "-e", "IRkernel::main()", "--args", "{connection_file}"],
            "display_name": "R",
            "language": "R",
        },
        "torch-mods": {
            "argv": [
                "/opt/dsportal/venv/bin/dsportal-module-kernel",
                "--module-command",
                LMOD,
                "--modulepath",
                "/opt/modulefiles",
                "--load",
                "cuda/12.1",
                "--load",
                "pytorch/2.1",
                "--",
                "python3",
                "-c",
                LAUNCHER,
                "-f",
                "{connection_file}",
            ],
            "display_name": "PyTorch (modules)",
            "language": "python",
        },
        "ngc-pytorch": {
            "argv": [
                "/usr/bin/apptainer",
                "exec",
                "--nv",
                "--bind",
                f"/mnt/isilon,/home/alice,{RUNTIME},/scratch",
                "/images/pytorch_24.01-py3.sif",
                "python3",
                "-c",
                LAUNCHER,
                "-f",
                "{connection_file}",
            ],
            "display_name": "PyTorch 24.01 (NGC)",
            "language": "python",
        },
    }


@pytest.mark.parametrize(
    "overrides, left_out, note",
    [
        (
            {"which": lambda n: None if n == "R" else f"/usr/bin/{n}"},
            "ir",
            "R kernel left out: R is not installed on this node",
        ),
        (
            {"r_has_irkernel": lambda r: False},
            "ir",
            "R kernel left out: the R package IRkernel is not installed on this node",
        ),
        (
            {"missing_modules": lambda c, p, names: ["pytorch/2.1"]},
            "torch-mods",
            "kernel torch-mods left out: module(s) pytorch/2.1 not found",
        ),
        ({"exists": lambda p: p != LMOD}, "torch-mods", f"kernel torch-mods left out: no module system at {LMOD}"),
        (
            {"which": lambda n: None if n == "apptainer" else f"/usr/bin/{n}"},
            "ngc-pytorch",
            "kernel ngc-pytorch left out: apptainer (apptainer) is not installed on this node",
        ),
        (
            {"exists": lambda p: not p.endswith(".sif")},
            "ngc-pytorch",
            "kernel ngc-pytorch left out: image /images/pytorch_24.01-py3.sif not found",
        ),
    ],
)
def test_a_kernel_that_cannot_work_is_left_out_with_a_reason(overrides, left_out, note):
    kernels, storage = kernels_of(EXAMPLE)
    specs, notes = build_kernelspecs(kernels, storage, "/home/alice", "python", "/bin", probe(**overrides), RUNTIME)
    assert left_out not in specs and "python3" in specs
    assert notes == [note]


def test_kernel_config_errors():
    from portal.config import ConfigError

    bad = {
        **EXAMPLE,
        "kernels": {
            "modules": [{"name": "ir", "display_name": "x", "load": ["a;rm -rf /"]}],
            "containers": [{"name": "c", "display_name": "c", "image": "relative.sif"}],
        },
    }
    with pytest.raises(ConfigError) as info:
        parse_config(bad)
    text = str(info.value)
    assert 'kernels.modules[0].load[0]: "a;rm -rf /" (must be a module name' in text
    assert 'kernels.containers[0].image: "relative.sif" (must be an absolute path' in text
    assert "R kernels" not in text  # cross rules wait until every key is valid


def test_a_charliecloud_kernel_runs_unprivileged_with_the_home_the_storage_and_a_private_tmp(tmp_path):
    image = tmp_path / "debian-py"
    (image / "mnt" / "isilon").mkdir(parents=True)  # the image's mount point for the storage; none for /scratch
    kernels, storage = kernels_of(
        {
            **EXAMPLE,
            "kernels": {
                "container_runtime": "charliecloud",
                "r": False,
                "containers": [
                    {
                        "name": "debian-py",
                        "display_name": "Python 3 (container: debian-py)",
                        "image": str(image),
                        "binds": ["/scratch"],
                    }
                ],
            },
        }
    )
    specs, notes = build_kernelspecs(
        kernels,
        storage,
        "/home/alice",
        "python",
        "/bin",
        probe(exists=os.path.exists, which=lambda n: f"/usr/bin/{n}"),
        RUNTIME,
    )
    assert specs["debian-py"] == {
        "argv": [
            "/usr/bin/ch-run",
            "--home",
            "--private-tmp",
            "--cd=/home/alice",
            "--bind=/mnt/isilon",
            f"--bind={RUNTIME}",
            str(image),
            "--",
            "python3",
            "-c",
            LAUNCHER,
            "-f",
            "{connection_file}",
        ],
        "display_name": "Python 3 (container: debian-py)",
        "language": "python",
    }
    assert notes == ["kernel debian-py: /scratch is not bound (the image has no /scratch to mount it on)"]
    specs, notes = build_kernelspecs(
        kernels, storage, "/home/alice", "python", "/bin", probe(which=lambda n: None), RUNTIME
    )
    assert "debian-py" not in specs
    assert notes == ["kernel debian-py left out: charliecloud (ch-run) is not installed on this node"]
    specs, notes = build_kernelspecs(
        kernels,
        storage,
        "/home/alice",
        "python",
        "/bin",
        probe(exists=os.path.exists, which=lambda n: f"/usr/bin/{n}"),
        "/scratch/s/runtime",
    )
    assert "debian-py" not in specs  # its kernel sockets could not reach it
    assert notes == [
        "kernel debian-py left out: the image has no /scratch/s/runtime to mount the session's kernel "
        "sockets on (set TMPDIR under /tmp for the session)"
    ]


@pytest.mark.parametrize(
    "kernel, words",
    [
        ({"runtime": "apptainer", "image": "/images/debian-py"}, "apptainer runs .sif images"),
        ({"runtime": "charliecloud", "image": "/images/x.sif"}, "charliecloud runs a directory or .sqfs image"),
    ],
)
def test_each_runtime_gets_the_image_it_runs(kernel, words):
    from portal.config import ConfigError

    with pytest.raises(ConfigError, match=words):
        parse_config({**EXAMPLE, "kernels": {"containers": [{"name": "c", "display_name": "c", **kernel}]}})


def test_templates_are_added_updated_and_edits_survive(tmp_path):
    source, home = tmp_path / "notebooks", tmp_path / "home"
    source.mkdir()
    (source / "a.ipynb").write_text("A1")
    (source / "b.ipynb").write_text("B1")
    target = home / "templates"
    assert sync_templates(source, target) == ["added a.ipynb", "added b.ipynb"]
    assert sync_templates(source, target) == []
    (target / "a.ipynb").write_text("my edits")  # the user edits a
    (source / "a.ipynb").write_text("A2")  # both templates change
    (source / "b.ipynb").write_text("B2")
    (source / "c.ipynb").write_text("C1")  # and a new one appears
    assert sync_templates(source, target) == [
        "kept your edited a.ipynb; the new template is a (new template).ipynb",
        "updated b.ipynb",
        "added c.ipynb",
    ]
    assert (target / "a.ipynb").read_text() == "my edits"
    assert (target / "a (new template).ipynb").read_text() == "A2"
    assert (target / "b.ipynb").read_text() == "B2"
    assert sync_templates(source, target) == []
    (target / "a (new template).ipynb").write_text("edited that too")
    (source / "a.ipynb").write_text("A3")
    assert sync_templates(source, target) == ["kept your edited a.ipynb; the new template is a (new template 2).ipynb"]
    assert (target / "a (new template).ipynb").read_text() == "edited that too"
    import shutil

    shutil.rmtree(target)  # deleting ~/templates brings it back
    assert sync_templates(source, target) == ["added a.ipynb", "added b.ipynb", "added c.ipynb"]


def test_storage_links_and_a_missing_mount(tmp_path):
    home, mount = tmp_path / "home", tmp_path / "isilon"
    home.mkdir()
    storage = {"isilon": str(mount)}
    assert link_storage(home, storage) == [
        f"storage isilon: {mount} is not mounted on this node; wrote 'isilon is not available.txt'"
    ]
    assert (home / "isilon is not available.txt").exists() and not (home / "isilon").exists()
    mount.mkdir()
    assert link_storage(home, storage) == [f"storage isilon: linked ~/isilon -> {mount}"]
    assert os.readlink(home / "isilon") == str(mount)
    assert not (home / "isilon is not available.txt").exists()
    assert link_storage(home, storage) == []
    (home / "isilon").unlink()
    (home / "isilon").mkdir()
    assert link_storage(home, storage) == ["storage isilon: ~/isilon exists and is not a link; left it alone"]


def test_prepare_writes_a_private_kernel_folder_first_on_jupyter_path(tmp_path, capfd):
    home = tmp_path / "alice"
    home.mkdir()
    for job in range(15):
        log = home / f".dsportal-session-{job}.log"
        log.write_text("old")
        os.utime(log, (1000 + job, 1000 + job))
    kernels, _ = kernels_of(EXAMPLE)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    (tmp / "dsportal-alice-70-old").mkdir()  # an earlier session's folder: removed
    planted = tmp / "dsportal-alice-77-planted"  # made by another account: left alone, not used
    planted.mkdir(mode=0o777)
    os.chown(planted, 12345, 12345)
    env = {
        "HOME": str(home),
        "USER": "alice",
        "SLURM_JOB_ID": "77",
        "JUPYTER_PATH": "/elsewhere",
        "TMPDIR": str(tmp),
        "DSPORTAL_SESSION": json.dumps({"storage": {"isilon": str(tmp_path / "nope")}, "kernels": kernels}),
    }
    updates = prepare(env, probe(missing_modules=lambda c, p, names: names))
    folder = Path(updates["JUPYTER_PATH"].split(os.pathsep)[0])
    # the kernelspecs are written in the background while JupyterLab would load; its last log line says it is done
    printed = []
    wait_until(
        lambda: printed.append(capfd.readouterr().out) or "dsportal: kernels: " in "".join(printed),
        20,
        "the background kernelspec writer finishing",
        every=0.05,
    )
    assert updates["JUPYTER_PATH"].endswith(os.pathsep + "/elsewhere")
    assert folder.parent == tmp and folder.name.startswith("dsportal-alice-77-")
    assert oct(folder.stat().st_mode & 0o777) == "0o700"
    assert sorted(p.name for p in tmp.iterdir()) == sorted([folder.name, planted.name])
    assert sorted(p.name for p in (folder / "kernels").iterdir()) == ["ir", "ngc-pytorch", "python3"]
    assert (home / "templates" / "getting-started.ipynb").exists()
    assert sorted(p.name for p in home.glob(".dsportal-session-*.log")) == sorted(
        f".dsportal-session-{job}.log" for job in range(5, 15)
    )  # the newest 10 job logs are kept
    log = "".join(printed)  # read at fd level: the background writer is another process
    assert "dsportal: templates: added getting-started.ipynb" in log
    assert "dsportal: kernel torch-mods left out: module(s) cuda/12.1, pytorch/2.1 not found" in log
    assert "dsportal: storage isilon:" in log and "is not mounted on this node" in log
    assert "dsportal: kernels: python3, ir, ngc-pytorch" in log
    # JupyterLab does not ask about Jupyter's news (the admin's sessions.jupyterlab_news is false by default)
    assert updates["JUPYTER_CONFIG_PATH"] == str(folder / "config")
    assert json.loads((folder / "config" / "labconfig" / "default_setting_overrides.json").read_text()) == {
        "@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False}
    }
    # JupyterLab offers no debugger; the kernels' sockets live in the private folder
    assert json.loads((folder / "config" / "labconfig" / "page_config.json").read_text()) == {
        "disabledExtensions": {"@jupyterlab/debugger-extension": True, "@jupyterhub/jupyter-server-proxy": True},
        "buildCheck": False,
        "buildAvailable": False,
    }
    assert updates["JUPYTER_RUNTIME_DIR"] == str(folder / "runtime")
    assert oct((folder / "runtime").stat().st_mode & 0o777) == "0o700"


def test_prepare_records_what_the_session_runs_with_for_its_receipt(tmp_path):
    """In the background, after the kernels: the packages of the kernel's Python (the user's layer over the
    portal's), the modules loaded, the kernels, the home's commit when it is a repository; private to the user."""
    home = tmp_path / "alice"
    home.mkdir()
    git = ["git", "-C", str(home), "-c", "user.name=a", "-c", "user.email=a@b"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "start"], check=True)
    env = {
        "HOME": str(home),
        "USER": "alice",
        "SLURM_JOB_ID": "78",
        "SLURM_JOB_NODELIST": "node002",
        "LOADEDMODULES": "cuda/12.4:cudnn/9",
        "TMPDIR": str(tmp_path),
        "DSPORTAL_SESSION": json.dumps({}),
    }
    updates = prepare(env)
    written = home / ".dsportal" / "receipts" / "78.environment.json"
    wait_until(written.exists, 60, "the session's environment written for its receipt")
    facts = json.loads(written.read_text())
    assert oct(written.parent.stat().st_mode & 0o777) == "0o700" and oct(written.stat().st_mode & 0o777) == "0o600"
    assert (facts["job_id"], facts["kind"], facts["nodes"]) == ("78", "session", "node002")
    assert facts["python"] == updates["DSPORTAL_KERNEL_PYTHON"]
    assert facts["modules"] == ["cuda/12.4", "cudnn/9"] and facts["kernels"] == [{"name": "python3"}]
    names = {p.split("==")[0].lower() for p in facts["packages"]}
    assert {"ipykernel", "jupyterlab", "dsportal"} <= names  # the portal's, seen through the user's layer
    assert facts["portal"] and facts["git"]["folder"] == str(home) and len(facts["git"]["commit"]) == 40


def test_the_news_prompt_stays_when_the_admin_allows_it(tmp_path):
    env = {
        "HOME": str(tmp_path),
        "USER": "alice",
        "SLURM_JOB_ID": "78",
        "TMPDIR": str(tmp_path),
        "JUPYTER_CONFIG_PATH": "/site",
        "DSPORTAL_SESSION": json.dumps({"jupyterlab_news": True}),
    }
    config = Path(prepare(env)["JUPYTER_CONFIG_PATH"].split(os.pathsep)[0])
    assert sorted(p.name for p in (config / "labconfig").iterdir()) == ["page_config.json"]
    env["DSPORTAL_SESSION"] = json.dumps({})
    config_path = prepare(env)["JUPYTER_CONFIG_PATH"]
    assert config_path.endswith(os.pathsep + "/site")
    assert (Path(config_path.split(os.pathsep)[0]) / "labconfig" / "default_setting_overrides.json").exists()


def test_module_kernel_loads_real_modules_with_lmod(tmp_path):
    modules = tmp_path / "modulefiles" / "demo"
    modules.mkdir(parents=True)
    (modules / "1.0.lua").write_text('setenv("DSPORTAL_DEMO", "loaded")\n')
    launcher = [
        sys.executable,
        "-m",
        "spawner.job.kernels.modulekernel",
        "--module-command",
        LMOD,
        "--modulepath",
        str(tmp_path / "modulefiles"),
        "--load",
        "demo/1.0",
        "--",
        sys.executable,
        "-c",
        "import os; print(os.environ['DSPORTAL_DEMO'], os.environ['LOADEDMODULES'])",
    ]
    out = subprocess.run(launcher, capture_output=True, text=True, timeout=60, cwd=Path(__file__).resolve().parents[2])
    assert (out.returncode, out.stdout) == (0, "loaded demo/1.0\n"), out.stderr
    missing = subprocess.run(
        launcher[:7] + ["--load", "nope", "--", "true"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert missing.returncode == 1 and "loading nope failed" in missing.stderr
    real = NodeProbe()
    assert real.missing_modules(LMOD, [str(tmp_path / "modulefiles")], ["demo/1.0", "nope/2"]) == ["nope/2"]


def test_container_kernel_runs_through_the_runtime_with_the_exact_arguments(tmp_path, a_fake_runtime, monkeypatch):
    from jupyter_client.manager import start_new_kernel

    image = tmp_path / "pytorch_24.01-py3.sif"
    image.write_text("stand-in image")
    kernels, _ = kernels_of(
        {
            **EXAMPLE,
            "kernels": {
                "r": False,
                "containers": [{"name": "ngc", "display_name": "NGC", "image": str(image), "runtime": "apptainer"}],
            },
        }
    )
    home = tmp_path / "home"
    home.mkdir()
    sockets = tmp_path / "sockets"
    sockets.mkdir(mode=0o700)
    specs, notes = build_kernelspecs(
        kernels,
        {"isilon": "/mnt/isilon"},
        str(home),
        sys.executable,
        str(Path(sys.executable).parent),
        NodeProbe(),
        str(sockets),
    )
    assert notes == [] and specs["ngc"]["argv"][0] == str(a_fake_runtime.path)
    write_kernelspecs(tmp_path / "jp" / "kernels", specs)
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jp"))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    manager, client = start_new_kernel(kernel_name="ngc", startup_timeout=60)
    outputs: list[str] = []
    reply = client.execute_interactive(
        "print(6 * 7)", timeout=30, output_hook=lambda msg: outputs.append(msg["content"].get("text", ""))
    )
    client.stop_channels()
    manager.shutdown_kernel(now=True)
    assert reply["content"]["status"] == "ok" and "42\n" in outputs
    [call] = a_fake_runtime.calls()
    assert call["argv"][:6] == ["exec", "--nv", "--bind", f"/mnt/isilon,{home},{sockets}", str(image), "python3"]
    assert call["argv"][6:9] == ["-c", LAUNCHER, "-f"]  # ipykernel through the portal's launcher: no TCP pipe
    assert call["cuda"] == "0,1"  # the job's GPUs reach the container


def test_images_pull_through_the_stand_in(tmp_path, a_fake_runtime):
    dest = tmp_path / "images"
    dest.mkdir()
    env = {**os.environ, "NGC_API_KEY": "secret-ngc-key", "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    cmd = [
        sys.executable,
        "-m",
        "portal.admin.cli",
        "images",
        "pull",
        "nvcr.io/nvidia/pytorch:24.01-py3",
        "--dest",
        str(dest),
    ]
    ok = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env)
    assert ok.returncode == 0, ok.stderr
    sif = dest / "pytorch_24.01-py3.sif"
    assert sif.exists()
    assert "Copying blob 2 of 2" in ok.stderr  # the runtime's progress is shown
    [call] = a_fake_runtime.calls()
    pulled_to = Path(call["argv"][1])  # a private work folder beside the destination, renamed into place after
    assert call["argv"][::2] == ["pull", "docker://nvcr.io/nvidia/pytorch:24.01-py3"]
    assert (pulled_to.name, pulled_to.parent.parent, pulled_to.parent.name[:15]) == (sif.name, dest, ".dsportal-pull-")
    # the work folder is gone; beside the image, its digest for the sessions' receipts (the .sif's sha256)
    assert sorted(p.name for p in dest.iterdir()) == [sif.name, f"{sif.name}.digest"]
    assert (dest / f"{sif.name}.digest").read_text() == f"sha256:{hashlib.sha256(sif.read_bytes()).hexdigest()}\n"
    assert (call["user"], call["password"]) == ("$oauthtoken", "secret-ngc-key")
    assert "secret-ngc-key" not in " ".join(call["argv"])
    snippet = yaml.safe_load(ok.stdout)
    assert snippet == {
        "kernels": {
            "containers": [
                {
                    "name": "ngc-pytorch-24.01-py3",
                    "display_name": "pytorch 24.01-py3 (NGC container)",
                    "image": str(sif),
                    "runtime": "apptainer",
                }
            ]
        }
    }
    parse_config({"ldap": {"bind_dn_template": "uid={username}"}, **snippet})  # the printed lines are valid


def test_a_hung_pull_is_stopped_at_its_timeout(tmp_path, a_fake_runtime):
    env = {
        **os.environ,
        "NGC_API_KEY": "k",
        "FAKE_RUNTIME_PULL": "hang",
        "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
    }
    dest = tmp_path / "images"
    dest.mkdir()
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "portal.admin.cli",
            "images",
            "pull",
            "nvcr.io/nvidia/pytorch:24.01-py3",
            "--dest",
            str(dest),
            "--timeout",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert result.returncode == 1
    assert "Copying blob 1 of 2" in result.stderr  # its progress was shown while it ran
    assert "the pull did not finish within 2 s" in result.stderr
    assert list(dest.iterdir()) == []  # neither a partial image nor the work folder with its authfile


@pytest.mark.parametrize(
    "setup, message",
    [
        (
            {"FAKE_RUNTIME_PULL": "unauthorized"},
            "nvcr.io refused the login; check the user and the password (for NGC: create a new API key",
        ),
        (
            {"FAKE_RUNTIME_PULL": "notfound"},
            "nvcr.io has no image nvcr.io/nvidia/pytorch:24.01-py3; check the name and the tag",
        ),
        ({"FAKE_RUNTIME_PULL": "nospace"}, "the disk is full"),
        ({"NGC_API_KEY": ""}, "no NGC API key: set NGC_API_KEY or pass --password-file FILE"),
        ({"image": "ubuntu:22.04"}, "is not an image name this command takes; give the registry, the path and the tag"),
        ({"image": "nvcr.io/nvidia/pytorch:24.01;rm"}, "is not an image name this command takes"),
        ({"no_runtime": True}, "no container tools here: install Apptainer (or SingularityCE), or skopeo and umoci"),
    ],
)
def test_images_pull_errors_say_what_to_do(tmp_path, a_fake_runtime, setup, message):
    env = {**os.environ, "NGC_API_KEY": "k", "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    env.update({k: v for k, v in setup.items() if k.isupper()})
    if setup.get("no_runtime"):
        env["PATH"] = str(tmp_path / "no-tools")
    image = setup.get("image", "nvcr.io/nvidia/pytorch:24.01-py3")
    result = subprocess.run(
        [sys.executable, "-m", "portal.admin.cli", "images", "pull", image, "--dest", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert result.returncode == 1
    assert message in result.stderr.splitlines()[-1] or message in result.stderr
    assert result.stdout == ""
