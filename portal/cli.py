"""The `dsportal` command."""

from __future__ import annotations

import argparse
import sys

from .config import SCHEMA, ConfigError, config_path, load_config
from .example import render_example


def _check_config(args: argparse.Namespace) -> int:
    path = config_path(args.file or args.config)
    try:
        load_config(path)
    except ConfigError as e:
        for line in e.errors:
            print(line)
        print(f"{len(e.errors)} problem(s) in {path}; fix them and run `dsportal check-config {path}` again.",
              file=sys.stderr)
        return 1
    print("OK")
    return 0


def _example_config(args: argparse.Namespace) -> int:
    sys.stdout.write(render_example(SCHEMA))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dsportal", description="DS Portal administration.")
    parser.add_argument("--config", help="admin config file (default: $DSPORTAL_CONFIG or /etc/dsportal/portal.yaml)")
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check-config", help="validate the admin config file; prints OK or every error")
    check.add_argument("file", nargs="?", help="the file to check")
    check.set_defaults(func=_check_config)
    example = sub.add_parser("example-config", help="print a commented example config with every key")
    example.set_defaults(func=_example_config)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
