"""The ``ggp-persona`` command line.

Each subcommand is two small functions in this file: ``add_<name>(subparsers)`` declares its
arguments and sets ``func``, and ``cmd_<name>(args) -> int`` does the work and returns the exit
status.  To add one, write both and list ``add_<name>`` in ``SUBCOMMANDS``.

Exit statuses: 0 success, 1 the command ran and found a failure (e.g. invalid rules),
2 usage errors (bad arguments, a missing or unreadable file).
"""
from __future__ import annotations

import argparse
import os
import sys

PROG = "ggp-persona"


class UsageError(Exception):
    """A problem with what the user asked for: printed as one line, exit status 2."""


def _readable_file(path: str) -> str:
    if not os.path.exists(path):
        raise UsageError(f"no such file: {path}")
    if os.path.isdir(path):
        raise UsageError(f"is a directory, not a rule file: {path}")
    if not os.access(path, os.R_OK):
        raise UsageError(f"cannot read: {path}")
    return path


# ------------------------------------------------------------------------------- check
def add_check(sub) -> None:
    p = sub.add_parser("check", help="validate a GDL (KIF) rule sheet",
                       description="Read and validate a GDL rule sheet; print every problem as "
                                   "file:line:col: level: message and a one-line verdict. Exit "
                                   "status 0 when valid or only warnings, 1 when invalid.")
    p.add_argument("rules", metavar="RULES", help="path to a .kif rule file")
    p.set_defaults(func=cmd_check)


def cmd_check(args) -> int:
    path = _readable_file(args.rules)
    from gdl.validate import check_file, verdict

    try:
        _description, problems = check_file(path)
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror or e}") from None
    for problem in problems:
        print(problem)
    result = verdict(problems)
    errors = sum(1 for p in problems if getattr(p, "level", "") == "error")
    warnings = sum(1 for p in problems if getattr(p, "level", "") == "warning")
    print(f"{path}: {result} ({errors} error{'s' * (errors != 1)}, "
          f"{warnings} warning{'s' * (warnings != 1)})")
    return 1 if result == "invalid" else 0


# ------------------------------------------------------------------------------- persona
def add_persona(sub) -> None:
    p = sub.add_parser("persona", help="list or show personas",
                       description="Personas are TOML files of search and character parameters; "
                                   "the presets live in personas/.")
    actions = p.add_subparsers(dest="persona_action", metavar="ACTION")
    ls = actions.add_parser("list", help="one line per preset persona")
    ls.add_argument("--dir", help="list the persona files of this directory instead")
    ls.set_defaults(func=cmd_persona_list)
    show = actions.add_parser("show", help="a persona, validated, as TOML")
    show.add_argument("persona", metavar="NAME|FILE", help="a preset name or a .toml file")
    show.set_defaults(func=cmd_persona_show)


def cmd_persona_list(args) -> int:
    from agent.persona import persona_list
    return persona_list(args)


def cmd_persona_show(args) -> int:
    from agent.persona import persona_show
    return persona_show(args)


# ------------------------------------------------------------------------------- main
SUBCOMMANDS = [add_check, add_persona]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="General Game Playing agent: a GGP player server with personas.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for add in SUBCOMMANDS:
        add(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args.func(args) or 0)
    except UsageError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
