"""The session server's deferred import (spawner/jupyter/session/deferred.py): jsonschema loads without building
rfc3987_syntax's parser, and the formats it serves still check the same way once asked."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import sys
from spawner.jupyter.session.deferred import defer_rfc3987_syntax
print(defer_rfc3987_syntax() if DEFER else "not deferred")
from jsonschema import FormatChecker
import jupyter_events
print("lark" in sys.modules)
checker = FormatChecker()
print([checker.conforms(v, f) for v, f in (("http://example.org/ä", "iri"), ("no iri here", "iri"),
      ("../a?b#c", "iri-reference"), ("a b", "iri-reference"))])
print("lark" in sys.modules, type(sys.modules["rfc3987_syntax"]).__name__)
print(defer_rfc3987_syntax())
"""


def run(code: str, defer: bool = True) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", f"DEFER = {defer}\n{code}"], capture_output=True, text=True, timeout=60, check=True
    )
    return out.stdout.splitlines()


def test_jsonschema_imports_without_the_parser_and_checks_iris_on_first_use():
    assert run(PROBE) == ["True", "False", "[True, False, True, False]", "True module", "False"]


def test_the_checks_are_those_of_the_real_module():
    assert run(PROBE, defer=False)[1:3] == ["True", "[True, False, True, False]"]


def test_its_submodules_and_its_spec_are_still_there():
    code = (
        "import importlib.util, sys\nfrom spawner.jupyter.session.deferred import defer_rfc3987_syntax\n"
        "print(defer_rfc3987_syntax())\n"
        "print(importlib.util.find_spec('rfc3987_syntax').name)\n"
        "from rfc3987_syntax.syntax_helpers import is_valid_syntax\n"
        "print(is_valid_syntax('iri', 'http://example.org/ä'), is_valid_syntax('iri', 'no iri'))"
    )
    assert run(code) == ["True", "rfc3987_syntax", "True False"]


def test_two_threads_asking_at_once_import_it_once():
    code = (
        "import sys, threading\nfrom spawner.jupyter.session.deferred import defer_rfc3987_syntax, is_valid_syntax\n"
        "defer_rfc3987_syntax()\nanswers = []\n"
        "threads = [threading.Thread(target=lambda: answers.append(is_valid_syntax('iri', 'http://a/b'))) "
        "for _ in range(4)]\n"
        "[t.start() for t in threads]; [t.join() for t in threads]\n"
        "import rfc3987_syntax\nprint(answers, type(rfc3987_syntax).__name__)"
    )
    assert run(code) == ["[True, True, True, True] module"]


def test_an_imported_module_is_left_alone():
    code = "import rfc3987_syntax\nfrom spawner.jupyter.session.deferred import defer_rfc3987_syntax\nprint(defer_rfc3987_syntax())"
    assert run(code) == ["False"]


LABAPP = """
import sys
from spawner.jupyter.session.deferred import import_labapp_without_yarn_probe
print(import_labapp_without_yarn_probe() if DEFER else "not deferred")
import jupyterlab.labapp, jupyterlab.commands
print(jupyterlab.labapp.app_version == jupyterlab.commands.get_app_version(jupyterlab.commands.AppOptions(registry="x")))
print(jupyterlab.commands._yarn_config.__module__)
"""


def fake_node(tmp_path) -> tuple[dict, object]:
    """A `node` first on PATH that leaves a mark when run and answers like yarn with no configuration."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    node = bin_dir / "node"
    node.write_text(f"#!/bin/sh\necho ran >> {tmp_path / 'node-ran'}\n")
    node.chmod(0o755)
    import os

    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}, tmp_path / "node-ran"


def run_env(code: str, env: dict, defer: bool) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", f"DEFER = {defer}\n{code}"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=True,
    )
    return out.stdout.splitlines()


def test_labapp_imports_without_running_node_and_reads_the_same_version(tmp_path):
    env, ran = fake_node(tmp_path)
    assert run_env(LABAPP, env, defer=True) == ["True", "True", "jupyterlab.commands"]
    assert not ran.exists()


def test_without_the_deferral_labapp_runs_node(tmp_path):
    env, ran = fake_node(tmp_path)
    assert run_env(LABAPP, env, defer=False)[0] == "not deferred"
    assert ran.read_text() == "ran\n"


def test_collection_is_held_while_the_server_starts_and_what_it_made_set_aside_after():
    code = (
        "import gc\nfrom spawner.jupyter.session.deferred import hold_collection, resume_collection\n"
        "hold_collection()\nprint(gc.isenabled(), gc.get_freeze_count())\n"
        "made = [[object()] for _ in range(1000)]\n"
        "resume_collection()\nprint(gc.isenabled(), gc.get_freeze_count() >= 1000)"
    )
    assert run(code) == ["False 0", "True True"]


def test_the_server_listening_ends_the_hold_and_then_reports_its_port():
    code = (
        "import gc\nfrom types import SimpleNamespace\n"
        "from spawner.jupyter.session.deferred import hold_collection\nfrom spawner.jupyter import singleuser\n"
        "calls = []\n"
        "app = SimpleNamespace(io_loop=SimpleNamespace(add_callback=lambda f, *a: calls.append(f.__name__)))\n"
        "hold_collection()\nprint(gc.isenabled())\nsingleuser.listening(app)\nprint(gc.isenabled(), calls)"
    )
    assert run(code) == ["False", "True ['report_port']"]
