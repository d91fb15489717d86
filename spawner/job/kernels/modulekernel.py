"""`dsportal-module-kernel`: load environment modules, then become the kernel command.

    dsportal-module-kernel --module-command LMOD [--modulepath DIR] --load cuda/12.1 -- python3 -m ipykernel_launcher -f F

Lmod (`lmod python load ...`) and Environment Modules (`modulecmd python
load ...`) both print Python code that sets os.environ; that is their own
Python interface, used here instead of sourcing a shell init script, so no
shell ever sees the names.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

from .kernelspecs import module_environment

LOAD_TIMEOUT = 120


def load_modules(module_command: str, modulepath: list[str], names: list[str]) -> None:
    os.environ.update(module_environment(modulepath))
    result = subprocess.run(
        [module_command, "python", "load", *names], capture_output=True, text=True, timeout=LOAD_TIMEOUT
    )
    if result.returncode != 0:
        sys.exit(f"dsportal-module-kernel: loading {' '.join(names)} failed: {result.stderr.strip()}")
    exec(result.stdout, {"os": os})  # the module system's own Python output


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="dsportal-module-kernel")
    parser.add_argument("--module-command", required=True)
    parser.add_argument("--modulepath", action="append", default=[])
    parser.add_argument("--load", action="append", required=True)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no kernel command after --")
    load_modules(args.module_command, args.modulepath, args.load)
    os.execvp(command[0], command)


if __name__ == "__main__":
    main()
