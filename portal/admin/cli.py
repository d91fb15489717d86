"""The `dsportal` command.

`build_parser()` builds the whole command line and does nothing else (the docs' CLI reference and the
completion scripts are made from it); `main()` runs a subcommand.  `check-config` and `doctor` print lines
for a person or, with `--json`, one JSON object for a script; the exit status is the same either way.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from ..cleartext import cleartext_warnings
from ..config import ConfigError, config_path, load_config, renamed_warnings
from ..example import render_example
from ..version import version
from .completion import DIRECTORY, FILE, SHELLS

DEFAULT_FILE = "$DSPORTAL_CONFIG or /etc/dsportal/portal.yaml"
JSON_HELP = "print one JSON object on stdout instead of lines (the exit status is the same)"


def _check_config(args: argparse.Namespace) -> int:
    path = config_path(args.file or args.config)
    try:
        settings = load_config(path)
    except ConfigError as e:
        if args.json:
            return _print_json(config_report(path, e.errors, []))
        for line in e.errors:
            print(line)
        print(
            f"{len(e.errors)} problem(s) in {path}; fix them and run `dsportal check-config {path}` again.",
            file=sys.stderr,
        )
        return 1
    findings = config_findings(settings)
    refused = state_refusal(settings)
    if refused:
        if args.json:
            return _print_json(config_report(path, [refused], []))
        print(refused)
        print(f"the hub's state in {settings.hub.data_dir} is refused; see above.", file=sys.stderr)
        return 1
    if args.json:
        return _print_json(config_report(path, [], findings))
    print("OK")
    for level, text in findings:
        print(f"{level}: {text}", file=sys.stderr)
    return 0


def state_refusal(settings) -> str:
    """Why the hub would refuse its state (portal/statestamp.py), "" where it would not, or cannot be read here."""
    from .. import statestamp

    try:
        found = statestamp.verdict(statestamp.read_stamp(settings.hub.data_dir), version())
    except OSError:  # a data_dir this account cannot read: the hub's start says it
        return ""
    return "" if found.ok else f"hub.data_dir: {found.message}"


def config_findings(settings) -> list[tuple[str, str]]:
    """What check-config says of a valid file, as ("warning" | "note", text): passwords in clear text, and each
    container kernel's image (images live on shared storage: a missing one is a warning here, not an error)."""
    from .doctor import container_images

    findings = [("warning", f"INSECURE: {warning}") for warning in cleartext_warnings(settings)]
    findings += [("warning", warning) for warning in renamed_warnings(settings)]
    findings += [("note" if r.ok else "warning", f"{r.name}: {r.detail}") for r in container_images(settings)]
    return findings


def config_report(path, errors: list[str], findings: list[tuple[str, str]]) -> dict:
    """`check-config --json`: ok, the file, every error, and a valid file's warnings and notes."""
    return {
        "ok": not errors,
        "file": str(path),
        "errors": errors,
        "warnings": [text for level, text in findings if level == "warning"],
        "notes": [text for level, text in findings if level == "note"],
    }


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


def _proxy(args: argparse.Namespace) -> int:
    """Runs (execs) configurable-http-proxy as the config says, or prints its command line with --print."""
    import shutil

    from ..proxycommand import proxy_argv, proxy_problems, proxy_settings

    path = config_path(args.file or args.config)
    try:
        hub = proxy_settings(path)
    except ConfigError as e:
        for line in e.errors:
            print(line, file=sys.stderr)
        print(f"dsportal proxy: {path}'s hub section is not valid; fix it (dsportal check-config).", file=sys.stderr)
        return 1
    chp = args.chp or shutil.which("configurable-http-proxy") or ""
    if not chp:
        print(
            "dsportal proxy: configurable-http-proxy is not on PATH; install it (npm) or name it with --chp.",
            file=sys.stderr,
        )
        return 1
    argv = proxy_argv(hub, chp)
    if args.print:
        print(json.dumps(argv))
        return 0
    problems = proxy_problems(hub, dict(os.environ))
    for problem in problems:
        print(f"dsportal proxy: {problem}", file=sys.stderr)
    if problems:
        return 1
    sys.stdout.flush()
    os.execv(chp, argv)  # the proxy takes this process's place: its service manager sees and stops it


def _doctor(args: argparse.Namespace) -> int:
    from .doctor import Context, Result, diagnose, run_command, sample_user

    path = config_path(args.file or args.config)
    try:
        settings = load_config(path)
    except ConfigError as e:
        return _doctor_says(args.json, path, None, [Result("config", False, line) for line in e.errors])
    valid = Result("config", True, f"{path} is valid")
    user = args.user or sample_user(settings)
    if user is None:
        missing = Result("sample user", False, "slurm.user_groups names no group with members; pass --user NAME")
        return _doctor_says(args.json, path, None, [valid, missing])
    results = diagnose(Context(settings, args.service_account, user, run_command))
    status = _doctor_says(args.json, path, user, [valid, *results])
    if not args.json:
        passed = sum(r.ok for r in results)
        print(f"{passed} of {len(results)} checks passed", file=sys.stderr)
    return status


def _doctor_says(as_json: bool, path, user: str | None, checks: list) -> int:
    """Print the doctor's checks (OK/FIX lines, or the JSON of doctor_report); 0 when all passed, else 1."""
    if as_json:
        _print_json(doctor_report(path, user, checks))
    else:
        for check in checks:
            print(check.line())
    return 0 if all(check.ok for check in checks) else 1


def doctor_report(path, user: str | None, checks: list) -> dict:
    """`doctor --json`: ok, the version and file checked, the sample user, and each check's name, status ("ok"
    or "fail": every problem fails, the doctor has no warnings) and message (what was found or what to fix).
    The messages are the lines' words; no check puts a password or token in them."""
    return {
        "ok": all(check.ok for check in checks),
        "version": version(),
        "file": str(path),
        "user": user,
        "checks": [check.as_dict() for check in checks],
    }


def _print_json(report: dict) -> int:
    print(json.dumps(report, indent=2))
    return 0 if report["ok"] else 1


def _completion(args: argparse.Namespace) -> int:
    from .completion import completion_script

    sys.stdout.write(completion_script(build_parser(), args.shell))
    return 0


MAIN_EXAMPLES = """\
examples:
  dsportal check-config                          validate the admin config ($DSPORTAL_CONFIG or /etc/dsportal/portal.yaml)
  dsportal example-config > portal.yaml          start a config from the commented example of every key
  sudo dsportal doctor                           check Slurm, sudo, the session environment, LDAP on this head node
  sudo dsportal --config /srv/test.yaml doctor   the same against another config file
  dsportal proxy --print                         the proxy service's command line, as the config makes it
  dsportal images pull nvcr.io/nvidia/pytorch:24.01-py3 --dest /shared/images
  dsportal completion bash > /etc/bash_completion.d/dsportal
  dsportal --version

Each command's own help has its examples: dsportal check-config --help
"""

CHECK_EXAMPLES = """\
examples:
  dsportal check-config /etc/dsportal/portal.yaml
  dsportal check-config --json portal.yaml | jq -r '.errors[]'

exit status: 0 when the file is valid (its warnings included), 1 when it is not.
--json prints {"ok": true|false, "file": PATH, "errors": [...], "warnings": [...], "notes": [...]}.
"""

EXAMPLE_EXAMPLES = """\
examples:
  dsportal example-config > /etc/dsportal/portal.yaml
  dsportal example-config | less
"""

DOCTOR_EXAMPLES = """\
examples:
  sudo dsportal doctor
  sudo dsportal doctor --user alice /etc/dsportal/portal.yaml
  sudo dsportal doctor --json | jq -r '.checks[] | select(.status == "fail") | .message'

Run it as root or as the hub's service account (the sudo rule is checked as that account).
exit status: 0 when every check passes, 1 otherwise.
--json prints {"ok": ..., "version": ..., "file": ..., "user": ...,
               "checks": [{"name": ..., "status": "ok"|"fail", "message": ...}, ...]}.
"""

IMAGES_EXAMPLES = """\
examples:
  dsportal images pull nvcr.io/nvidia/pytorch:24.01-py3 --dest /shared/images
"""

PULL_DESCRIPTION = """\
The password (or NGC API key) comes from --password-file, $DSPORTAL_REGISTRY_PASSWORD or,
for nvcr.io, $NGC_API_KEY; never from the command line.
"""

PULL_EXAMPLES = """\
examples:
  dsportal images pull nvcr.io/nvidia/pytorch:24.01-py3 --dest /shared/images --api-key-file /root/ngc.key
  dsportal images pull registry.example.org/team/cuda:12.4 --dest /shared/images \\
      --runtime charliecloud --username builder --password-file /root/registry.pw

It prints the kernels.containers lines to add to the admin config.
"""

PROXY_EXAMPLES = """\
examples:
  dsportal proxy                the proxy service's command (deploy/systemd/dsportal-proxy.service), as the hub's
                                account with CONFIGPROXY_AUTH_TOKEN set: HTTPS with hub.tls_cert at hub.bind_url
  dsportal proxy --print        the command line it would run, as JSON
"""

COMPLETION_EXAMPLES = """\
examples:
  dsportal completion bash > /etc/bash_completion.d/dsportal   every user's bash (bash-completion)
  source <(dsportal completion bash)                             this bash only
  dsportal completion zsh > "${fpath[1]}/_dsportal"             zsh, then: autoload -U compinit && compinit
"""


def _subcommand(sub, name: str, summary: str, examples: str, **kwargs) -> argparse.ArgumentParser:
    return sub.add_parser(
        name, help=summary, epilog=examples, formatter_class=argparse.RawDescriptionHelpFormatter, **kwargs
    )


def build_parser() -> argparse.ArgumentParser:
    """The whole `dsportal` command line; no side effects (the docs' reference and completions read it)."""
    parser = argparse.ArgumentParser(
        prog="dsportal",
        description="DS Portal administration.",
        epilog=MAIN_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    parser.add_argument("--config", help=f"admin config file (default: {DEFAULT_FILE})").complete = FILE
    sub = parser.add_subparsers(dest="command", required=True)
    check = _subcommand(sub, "check-config", "validate the admin config file; prints OK or every error", CHECK_EXAMPLES)
    check.add_argument("file", nargs="?", help="the file to check").complete = FILE
    check.add_argument("--json", action="store_true", help=JSON_HELP)
    check.set_defaults(func=_check_config)
    example = _subcommand(sub, "example-config", "print a commented example config with every key", EXAMPLE_EXAMPLES)
    example.set_defaults(func=_example_config)
    _add_doctor(sub)
    _add_proxy(sub)
    _add_images(sub)
    completion = _subcommand(sub, "completion", "print a shell completion script", COMPLETION_EXAMPLES)
    completion.add_argument("shell", choices=SHELLS, help="the shell to complete in")
    completion.set_defaults(func=_completion)
    return parser


def _add_doctor(sub) -> None:
    summary = "check this installation: Slurm, sudo, the session environment, LDAP"
    doctor = _subcommand(sub, "doctor", summary, DOCTOR_EXAMPLES)
    doctor.add_argument("file", nargs="?", help=f"the admin config (default: {DEFAULT_FILE})").complete = FILE
    doctor.add_argument(
        "--user",
        help="a portal user to try sudo and the directory with (default: a member of the first of slurm.user_groups)",
    )
    doctor.add_argument("--service-account", default="dsportal", help="the hub's service account (default dsportal)")
    doctor.add_argument("--json", action="store_true", help=JSON_HELP)
    doctor.set_defaults(func=_doctor)


def _add_proxy(sub) -> None:
    summary = "run the proxy (configurable-http-proxy) as the admin config says: its address, TLS and origins"
    proxy = _subcommand(sub, "proxy", summary, PROXY_EXAMPLES)
    proxy.add_argument("file", nargs="?", help=f"the admin config (default: {DEFAULT_FILE})").complete = FILE
    proxy.add_argument("--chp", help="the configurable-http-proxy program (default: the one on PATH)").complete = FILE
    proxy.add_argument("--print", action="store_true", help="print its command line (JSON) instead of running it")
    proxy.set_defaults(func=_proxy)


def _add_images(sub) -> None:
    images = _subcommand(sub, "images", "container images for kernels", IMAGES_EXAMPLES)
    images_sub = images.add_subparsers(dest="images", required=True)
    summary = "fetch a registry image (NVIDIA NGC or another) as a kernel image"
    pull = _subcommand(images_sub, "pull", summary, PULL_EXAMPLES, description=PULL_DESCRIPTION)
    pull.add_argument("image", help="registry/path:tag, e.g. nvcr.io/nvidia/pytorch:24.01-py3")
    pull.add_argument(
        "--dest", required=True, help="folder for the image (one every compute node reads)"
    ).complete = DIRECTORY
    pull.add_argument(
        "--runtime",
        choices=("apptainer", "singularity", "charliecloud"),
        help="apptainer/singularity: a .sif file; charliecloud: a directory image (with skopeo and "
        "umoci). Default: the first of these installed",
    )
    pull.add_argument("--username", help="the registry login (NGC: $oauthtoken, the default)")
    pull.add_argument(
        "--password-file", "--api-key-file", dest="password_file", help="file holding the password or NGC API key"
    ).complete = FILE
    pull.add_argument("--timeout", type=float, default=7200, help="seconds before the pull is given up (default 7200)")
    pull.set_defaults(func=_images_pull)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
