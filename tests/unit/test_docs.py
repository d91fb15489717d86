"""The docs site (docs/): it builds with warnings as errors and nitpicky references, and its generated
references (docs/_ext/) hold every setting, metric and command of the code, each with its help text.

The build is the whole site, as `deploy/devcluster docs` makes it, into a
temporary folder: a broken internal link or reference, a page outside every
toctree, a bad directive or a generated part that does not parse fails it.
Sphinx and the docs' extensions are the `docs` extra (pyproject.toml), which
`deploy/devcluster up` installs.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from prometheus_client import REGISTRY

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
sys.path.insert(0, str(DOCS / "_ext"))

import cli_reference  # noqa: E402
import dsportal_reference  # noqa: E402
import metrics_reference  # noqa: E402
import settings_reference  # noqa: E402
from markdown_text import prose  # noqa: E402

from portal.admin.cli import build_parser  # noqa: E402
from portal.settings.section import Section, key  # noqa: E402

# what the build needs, module -> the package of pyproject's docs extra
BUILD_MODULES = {
    "sphinx": "sphinx",
    "myst_parser": "myst-parser",
    "pydata_sphinx_theme": "pydata-sphinx-theme",
    "sphinx_design": "sphinx-design",
    "sphinx_copybutton": "sphinx-copybutton",
    "sphinxcontrib.openapi": "sphinxcontrib-openapi",
}
BUILD_SECONDS = 120  # it takes about 15 s; a build that grows past this needs a look


# --- the generated references against the code --------------------------------------------------
def test_every_setting_has_a_help_text():
    assert settings_reference.keys_without_help() == [], "give each of these settings a help text (key(..., help))"


def test_a_setting_without_help_is_found():
    class Bare(Section):
        told: int = key(1, "Has its words.")
        silent: int = key(1)

    class Top(Section):
        part: list[Bare] = key([], "Entries.")

    assert settings_reference.keys_without_help(Top) == ["part[].silent"]


def test_the_settings_reference_has_every_key_with_its_default_and_type():
    page = settings_reference.settings_markdown()
    paths = [path for path, _, _ in settings_reference.all_keys()]
    assert {
        "hub",
        "hub.bind_url",
        "slurm.partitions",
        "slurm.partitions[].max_gpus",
        "kernels.containers[].image",
    } <= set(paths)
    assert all(f"`{path}`" in page for path in paths)
    start = page.index("### `slurm.max_hours`")
    block = page[start : page.index("###", start + 3)]
    assert "- **Type:** number" in block and "- **Default:** `12`" in block
    assert "must be a number above 0 and at most 8760" in block


def test_text_from_the_code_is_not_read_as_markup():
    assert prose("https://USER.<this host> and *.<host>, `code <x>` [a]") == (
        r"https://USER.\<this host\> and \*.\<host\>, `code <x>` \[a\]"
    )


def test_every_metric_of_the_registry_is_in_the_reference_with_help_and_labels():
    documented = {m.name.removesuffix("_total"): m for m in metrics_reference.portal_metrics()}
    registered = {f.name for f in REGISTRY.collect() if f.name.startswith("dsportal_")}
    assert registered and registered <= set(documented), "a metric registered in the hub is missing from the page"
    assert {"dsportal_sessions", "dsportal_gpus_allocated"} <= set(documented)  # the session collector's
    assert all(m.help.strip() for m in documented.values()), "every metric needs a help text"
    assert documented["dsportal_slurm_command_failures"].labels == ("command", "kind")
    assert documented["dsportal_slurm_command_failures"].name == "dsportal_slurm_command_failures_total"


def test_the_cli_reference_has_every_command_and_option():
    page = cli_reference.cli_markdown()
    for full, parser, _ in cli_reference.commands(build_parser()):
        assert f"## `{full}`" in page
        for action in parser._actions:
            if action.help != argparse.SUPPRESS and not isinstance(action, argparse._HelpAction):
                assert all(f"`{o}`" in page for o in action.option_strings), (full, action.option_strings)
    assert "## `dsportal images pull`" in page


def test_a_marker_is_filled_and_an_unknown_one_reported():
    filled, unknown = dsportal_reference.fill("# Title\n\n<!-- generated: cli -->\n<!-- generated: nothing -->\n")
    assert "## `dsportal check-config`" in filled
    assert unknown == ["<!-- generated: nothing -->"]


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # its parent package is missing (sphinxcontrib)
        return False


# --- the whole site -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def a_built_site(tmp_path_factory):
    """The site built with -W -n --keep-going into a temporary folder: (its html folder, Sphinx's output)."""
    missing = [package for module, package in BUILD_MODULES.items() if not _installed(module)]
    if missing:
        pytest.fail(f"the docs' tools are not installed ({', '.join(missing)}): run `deploy/devcluster up`")
    out = tmp_path_factory.mktemp("docs")
    started = time.monotonic()
    argv = [sys.executable, "-m", "sphinx", "-b", "html", "-W", "-n", "--keep-going", "-q"]
    done = subprocess.run(
        [*argv, "-d", str(out / "doctrees"), str(DOCS), str(out / "html")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=BUILD_SECONDS,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"the docs build failed ({time.monotonic() - started:.0f} s):\n{output}"
    return out / "html", output


def test_the_site_builds_without_a_warning(a_built_site):
    html, output = a_built_site
    assert "WARNING" not in output and "ERROR" not in output, output
    assert (html / "index.html").is_file()


def test_the_site_has_the_four_parts(a_built_site):
    html, _ = a_built_site
    for part in ("users", "admins", "reference", "developers"):
        assert (html / part / "index.html").is_file(), part
    front = (html / "index.html").read_text()
    assert all(f'href="{part}/index.html"' in front for part in ("users", "admins", "reference", "developers"))


def test_the_generated_pages_hold_the_code(a_built_site):
    html, _ = a_built_site
    settings = (html / "reference" / "settings.html").read_text()
    assert "slurm.partitions[].max_gpus" in settings and 'id="setting-slurm-max-hours"' in settings
    metrics = (html / "reference" / "metrics.html").read_text()
    assert all(m.name in metrics for m in metrics_reference.portal_metrics())
    cli = (html / "reference" / "cli.html").read_text()
    assert "dsportal images pull" in cli and "--password-file" in cli
    api = (html / "reference" / "rest-api.html").read_text()
    assert "/dsportal/runs/{job_id}/log" in api and "/users/{name}/servers/{server_name}" in api
    assert (html / "_downloads").is_dir()  # rest-api.yml, offered for download


def site_links(html: Path) -> dict[Path, list[str]]:
    """Each page of the built site -> the links it makes within the site (no scheme, no mail); the theme's own
    templates under _static/ are no pages."""
    found = {}
    for page in sorted(html.rglob("*.html")):
        if page.relative_to(html).parts[0] == "_static":
            continue
        hrefs = re.findall(r'href="([^"]*)"', page.read_text(errors="replace"))
        found[page] = [h for h in hrefs if h and not re.match(r"^([a-z][a-z0-9+.-]*:|//)", h)]
    return found


def broken_links(html: Path) -> list[str]:
    """Links between the built site's pages whose page, or whose #anchor on that page, does not exist."""
    ids: dict[Path, set[str]] = {}
    broken = []
    for page, hrefs in site_links(html).items():
        for href in hrefs:
            path, _, anchor = href.partition("#")
            target = (page.parent / path.split("?")[0]).resolve() if path else page
            if target.is_dir():
                target = target / "index.html"
            if not target.is_file():
                broken.append(f"{page.relative_to(html)}: {href}")
                continue
            if anchor and target.suffix == ".html":
                if target not in ids:
                    ids[target] = set(re.findall(r'id="([^"]+)"', target.read_text(errors="replace")))
                if anchor not in ids[target]:
                    broken.append(f"{page.relative_to(html)}: {href} (no such anchor)")
    return sorted(broken)


def test_every_internal_link_of_the_site_reaches_its_page_and_anchor(a_built_site):
    html, _ = a_built_site
    assert sum(len(hrefs) for hrefs in site_links(html).values()) > 500  # the pages do link to each other
    assert broken_links(html) == []


def test_a_broken_internal_link_is_found(tmp_path):
    (tmp_path / "a.html").write_text('<p id="here"><a href="b.html#there">b</a><a href="#here">a</a></p>')
    (tmp_path / "b.html").write_text('<a href="c.html">c</a><a href="https://example.org/x">out</a><p id="x"></p>')
    assert broken_links(tmp_path) == ["a.html: b.html#there (no such anchor)", "b.html: c.html"]
