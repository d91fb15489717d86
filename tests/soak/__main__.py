"""deploy/devcluster soak [--minutes N] [--users N] [--faults KIND,...|none] [--fault-every S] [--seed N] [--record F]
                       [--no-hostile]

Prints the report; exits 1 when a promise was broken, 0 when none was.
"""

from __future__ import annotations

import argparse
import sys

from deploy.dev import demo

from . import faults
from .driver import Plan, run
from .report import render


def kinds(text: str) -> tuple[str, ...]:
    if text == "none":
        return ()
    chosen = tuple(k.strip() for k in text.split(",") if k.strip())
    unknown = [k for k in chosen if k not in faults.KINDS]
    if unknown:
        raise argparse.ArgumentTypeError(f"no fault {', '.join(unknown)}; the faults are {', '.join(faults.KINDS)}")
    return chosen


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="deploy/devcluster soak", description=__doc__.split("\n\n")[1].strip())
    parser.add_argument("--minutes", type=float, default=5.0, help="how long the users act (default 5)")
    parser.add_argument("--users", type=int, default=demo.SOAK_COUNT, help=f"simulated users, 2 to {demo.SOAK_COUNT}")
    parser.add_argument(
        "--faults",
        type=kinds,
        default=faults.KINDS,
        help=f"comma-separated, or none (default all: {', '.join(faults.KINDS)})",
    )
    parser.add_argument(
        "--fault-every", type=float, default=40.0, help="seconds between faults on average (default 40)"
    )
    parser.add_argument("--seed", type=int, default=None, help="the random choices' seed (default: a new one)")
    parser.add_argument("--record", default="", help="write what was recorded to this file, as JSON (no tokens)")
    parser.add_argument(
        "--no-hostile", action="store_true", help="no hostile user (default: the last of the users attacks)"
    )
    args = parser.parse_args(argv)
    seed = {"seed": args.seed} if args.seed is not None else {}  # else the plan's own, new each time
    plan = Plan(
        minutes=args.minutes,
        users=args.users,
        faults=args.faults,
        fault_every=args.fault_every,
        record=args.record,
        hostile=not args.no_hostile,
        **seed,
    )
    report = run(plan)
    print(render(report), flush=True)
    return 1 if report.violations else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
