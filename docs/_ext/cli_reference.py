"""The `dsportal` command's reference, in Markdown, from its argparse parser (portal/admin/cli.py).

Every command and subcommand with its usage line, description, arguments and
options (help text, choices, default) and its epilog (the examples), in the
order the parser declares them.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator

from markdown_text import code, prose

from portal.admin.cli import build_parser

# argparse has no public way to walk a parser: its actions (parser._actions), a subcommand's help
# (subparsers._choices_actions) and the subparsers' action class are attributes every documentation tool reads
# (sphinx-argparse too), unchanged since Python 3.2; tests/unit/test_docs.py builds this page, so a change fails there.


def commands(
    parser: argparse.ArgumentParser, name: str = "", help_: str = ""
) -> Iterator[tuple[str, argparse.ArgumentParser, str]]:
    """(full command, its parser, its one-line help) for the parser and every subcommand below it."""
    name = name or parser.prog
    yield name, parser, help_
    for action in _subcommands(parser):
        helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
        for sub_name in helps:  # each once, aliases left out
            yield from commands(action.choices[sub_name], f"{name} {sub_name}", helps[sub_name])


def _subcommands(parser: argparse.ArgumentParser) -> list[argparse._SubParsersAction]:
    return [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]


def _argument(action: argparse.Action) -> list[str]:
    names = ", ".join(code(o) for o in action.option_strings) or code(action.metavar or action.dest)
    facts = []
    if action.choices is not None and not isinstance(action, argparse._SubParsersAction):
        facts.append("one of " + ", ".join(code(str(c)) for c in action.choices))
    if action.required and action.option_strings:
        facts.append("required")
    unset = action.default is None or action.default is False or action.default == argparse.SUPPRESS
    shown_default = not unset and action.nargs != 0
    if shown_default and "default" not in (action.help or ""):
        facts.append(f"default {code(str(action.default))}")
    help_ = prose(_expanded(action)) + (f" ({'; '.join(facts)})" if facts else "")
    return [f"{names}", f": {help_.strip()}", ""]


def _expanded(action: argparse.Action) -> str:
    """The help as --help prints it: argparse's %(default)s and the like filled in."""
    text = action.help or ""
    if "%" not in text:
        return text
    values = {name: value for name, value in vars(action).items() if value is not argparse.SUPPRESS}
    return text % {**values, "prog": "dsportal"}


def _text(text: str | None) -> list[str]:
    """A description or epilog: one paragraph as prose, text laid out in lines (examples) as it is."""
    if not text:
        return []
    if "\n" in text.strip():
        return ["```text", text.strip("\n"), "```", ""]
    return [prose(text), ""]


def _command(full: str, parser: argparse.ArgumentParser, help_: str) -> list[str]:
    anchor = "cli-" + full.replace(" ", "-")
    lines = [f"({anchor})=", f"## `{full}`", ""]
    lines += _text(help_) + _text(parser.description)
    lines += ["```text", parser.format_usage().strip(), "```", ""]
    shown = [
        a
        for a in parser._actions
        if a.help != argparse.SUPPRESS and not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction))
    ]
    positionals = [a for a in shown if not a.option_strings]
    options = [a for a in shown if a.option_strings]
    for title, actions in (("Arguments", positionals), ("Options", options)):
        if actions:
            lines += [f"**{title}**", ""]
            for action in actions:
                lines += _argument(action)
    for action in _subcommands(parser):
        lines += ["**Commands**", ""]
        for choice in action._choices_actions:
            target = f"{anchor}-{choice.dest}"
            lines += [f"[`{full} {choice.dest}`]({target})", f": {prose(choice.help or '')}", ""]
    lines += _text(parser.epilog)
    return lines


def cli_markdown(parser: argparse.ArgumentParser | None = None) -> str:
    parser = parser or build_parser()
    lines: list[str] = []
    for full, sub, help_ in commands(parser):
        lines += _command(full, sub, help_)
    return "\n".join(lines).rstrip() + "\n"
