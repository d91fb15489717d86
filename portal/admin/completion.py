"""`dsportal completion SHELL`: a shell completion script, written by shtab from the command's own parser.

The parser marks its file and folder arguments with these hints (shtab's `FILE` and `DIRECTORY` for the shells
offered here, which tests/unit/test_cli.py compares with shtab's), so that building the parser needs no shtab:
only this command does.
"""

from __future__ import annotations

import argparse

SHELLS = ("bash", "zsh", "tcsh")
FILE = {"bash": "_shtab_compgen_files", "zsh": "_files", "tcsh": "f"}
DIRECTORY = {"bash": "_shtab_compgen_dirs", "zsh": "_files -/", "tcsh": "d"}


def completion_script(parser: argparse.ArgumentParser, shell: str) -> str:
    """The script that completes `parser`'s subcommands, options and choices in `shell` (one of SHELLS)."""
    import shtab

    return shtab.complete(parser, shell=shell)
