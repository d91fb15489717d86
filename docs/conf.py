"""Sphinx configuration of the DS Portal docs (MyST Markdown, the PyData theme as JupyterHub's docs use).

Build: `deploy/devcluster docs` (into build/docs/html, warnings as errors);
tests/unit/test_docs.py builds the same with -W -n.  The reference pages'
generated parts come from the code of this checkout (docs/_ext/).
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
# this checkout's code first (not an installed copy): the references describe the code beside them
sys.path[:0] = [str(DOCS / "_ext"), str(ROOT)]


def _version() -> str:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    if "version" in project:
        return project["version"]
    from importlib.metadata import version  # a dynamic version: the installed package's

    return version("dsportal")


project = "DS Portal"
author = "DS Portal contributors"
copyright = "DS Portal contributors"
release = version = _version()

extensions = [
    "myst_parser",
    "sphinx_design",  # the front page's cards
    "sphinx_copybutton",  # a copy button on commands and config blocks
    "sphinxcontrib.openapi",
    "dsportal_reference",
]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_ext", "Thumbs.db", ".DS_Store"]

myst_enable_extensions = ["colon_fence", "deflist", "fieldlist"]
myst_heading_anchors = 3

html_theme = "pydata_sphinx_theme"
html_title = f"DS Portal {version}"
html_static_path = ["_static"]
html_css_files = ["dsportal.css"]
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
html_show_sourcelink = False
