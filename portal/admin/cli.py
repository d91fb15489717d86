"""The `dsportal` command."""

from __future__ import annotations

import argparse
import os
import sys

from ..cleartext import cleartext_warnings
from ..config import ConfigError, config_path, load_config
from ..example import render_example


def _check_config(args: argparse.Namespace) -> int:
    path = config_path(args.file or args.config)
    try:
        settings = load_config(path)
    except ConfigError as e:
        for line in e.errors:
            print(line)
        print(
            f"{len(e.errors)} problem(s) in {path}; fix them and run `dsportal check-config {path}` again.",
            file=sys.stderr,
        )
        return 1
    print("OK")
    for warning in cleartext_warnings(settings):
        print(f"warning: INSECURE: {warning}", file=sys.stderr)
    from .doctor import container_images

    for result in container_images(settings):  # images live on shared storage: a note here, not an error
        print(f"{'note' if result.ok else 'warning'}: {result.name}: {result.detail}", file=sys.stderr)
    return 0


def _example_config(args: argparse.Namespace) -> int:
    sys.stdout.write(render_example())
    return 0


def _images_pull(args: argparse.Namespace) -> int:
    from .images import PullError, kernel_yaml, pull
    from .registry import RefusedRequest, parse_ref, read_credential

    try:
        ref = parse_ref(args.image)
        credential = read_credential(ref, os.environ, args.username, args.password_file)
        print(f"Pulling {ref} into {args.dest}...", file=sys.stderr)
        plan = pull(ref, args.dest, args.runtime, credential, args.timeout)
    except (PullError, RefusedRequest) as e:
        print(f"dsportal images pull: {e}", file=sys.stderr)
        return 1
    print(f"# {plan.dest} is ready ({plan.runtime_name}). Add these lines to the admin config to offer it as a kernel:")
    print(kernel_yaml(plan), end="")
    return 0


def _doctor(args: argparse.Namespace) -> int:
    from .doctor import Context, diagnose, run_command, sample_user

    path = config_path(args.file or args.config)
    try:
        settings = load_config(path)
    except ConfigError as e:
        print("\n".join(f"FIX  config: {line}" for line in e.errors))
        return 1
    print(f"OK   config: {path} is valid")
    user = args.user or sample_user(settings)
    if user is None:
        print("FIX  sample user: slurm.user_groups names no group with members; pass --user NAME")
        return 1
    results = diagnose(Context(settings, args.service_account, user, run_command))
    for result in results:
        print(result.line())
    failed = [r for r in results if not r.ok]
    print(f"{len(results) - len(failed)} of {len(results)} checks passed", file=sys.stderr)
    return 1 if failed else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dsportal", description="DS Portal administration.")
    parser.add_argument("--config", help="admin config file (default: $DSPORTAL_CONFIG or /etc/dsportal/portal.yaml)")
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check-config", help="validate the admin config file; prints OK or every error")
    check.add_argument("file", nargs="?", help="the file to check")
    check.set_defaults(func=_check_config)
    example = sub.add_parser("example-config", help="print a commented example config with every key")
    example.set_defaults(func=_example_config)
    doctor = sub.add_parser("doctor", help="check this installation: Slurm, sudo, the session environment, LDAP")
    doctor.add_argument(
        "file", nargs="?", help="the admin config (default: $DSPORTAL_CONFIG or /etc/dsportal/portal.yaml)"
    )
    doctor.add_argument(
        "--user",
        help="a portal user to try sudo and the directory with (default: a member of the first of slurm.user_groups)",
    )
    doctor.add_argument("--service-account", default="dsportal", help="the hub's service account (default dsportal)")
    doctor.set_defaults(func=_doctor)
    images = sub.add_parser("images", help="container images for kernels").add_subparsers(dest="images", required=True)
    pull = images.add_parser(
        "pull",
        help="fetch a registry image (NVIDIA NGC or another) as a kernel image",
        description="The password (or NGC API key) comes from --password-file, "
        "$DSPORTAL_REGISTRY_PASSWORD or, for nvcr.io, $NGC_API_KEY; never from the "
        "command line.",
    )
    pull.add_argument("image", help="registry/path:tag, e.g. nvcr.io/nvidia/pytorch:24.01-py3")
    pull.add_argument("--dest", required=True, help="folder for the image (one every compute node reads)")
    pull.add_argument(
        "--runtime",
        choices=("apptainer", "singularity", "charliecloud"),
        help="apptainer/singularity: a .sif file; charliecloud: a directory image (with skopeo and "
        "umoci). Default: the first of these installed",
    )
    pull.add_argument("--username", help="the registry login (NGC: $oauthtoken, the default)")
    pull.add_argument(
        "--password-file", "--api-key-file", dest="password_file", help="file holding the password or NGC API key"
    )
    pull.add_argument("--timeout", type=float, default=7200, help="seconds before the pull is given up (default 7200)")
    pull.set_defaults(func=_images_pull)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
