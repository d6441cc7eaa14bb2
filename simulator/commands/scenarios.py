"""`clustersim scenarios [list]` / `clustersim scenarios copy NAME [DEST]`: the scenarios that
ship with clustersim, and a copy of one to start from.

The bundled scenarios are package data (``simulator.files.bundled_dir("scenarios")``), so they
are there however clustersim was installed; a copy is an ordinary YAML file whose ``hardware:``
names a bundled profile, ready for ``clustersim run``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from simulator.errors import InputError


def register(subparsers) -> None:
    p = subparsers.add_parser("scenarios", help="list the bundled scenarios, or copy one out as a starting point",
                              description=__doc__.split("\n\n")[0])
    p.add_argument("action", nargs="?", choices=("list", "copy"), default="list",
                   help="list (default) or copy")
    p.add_argument("name", nargs="?", help="copy: the scenario's name as listed (or plans/NAME for a plans file)")
    p.add_argument("dest", nargs="?", default=None,
                   help="copy: a file or an existing folder (default: NAME.yaml in the working directory; '-': stdout)")
    p.add_argument("--force", action="store_true", help="copy: overwrite DEST if it exists")
    p.set_defaults(handler=run)


def _folder() -> Path:
    from simulator.files import bundled_dir

    return bundled_dir("scenarios")


def bundled_scenarios() -> dict[str, Path]:
    """Name -> file of every bundled scenario and plans file (``plans/<name>``)."""
    folder = _folder()
    out = {p.stem: p for p in sorted(folder.glob("*.yaml"))}
    out |= {f"plans/{p.stem}": p for p in sorted((folder / "plans").glob("*.yaml"))}
    return out


def _summary(path: Path) -> str:
    """The file's first comment line: what the scenario is."""
    for line in path.read_text().splitlines():
        if line.startswith("#"):
            return line.lstrip("# ").strip()
        if line.strip():
            break
    return ""


def run(args: argparse.Namespace) -> int:
    found = bundled_scenarios()
    if args.action == "list":
        if args.name or args.dest:
            raise InputError("list takes no name; to copy one: clustersim scenarios copy NAME [DEST]",
                             source="command line")
        width = max(map(len, found), default=0)
        print(f"bundled scenarios ({_folder()}); copy one with: clustersim scenarios copy NAME [DEST]")
        for name, path in found.items():
            print(f"  {name:<{width}}  {_summary(path)}")
        return 0
    if not args.name:
        raise InputError("copy needs the NAME of a bundled scenario (clustersim scenarios lists them)",
                         source="command line", field="NAME")
    name = args.name.removesuffix(".yaml")
    if name not in found:
        raise InputError(f"no bundled scenario {args.name!r}; expected one of {', '.join(found)}",
                         source="command line", field="NAME")
    return copy_out(found[name], args.dest, force=args.force)


def copy_out(src: Path, dest: str | None, *, force: bool = False) -> int:
    from simulator.commands import check_outputs
    from simulator.files import STDOUT, OutputSet

    target = dest if dest is not None else src.name
    if target != STDOUT and Path(target).is_dir():
        target = str(Path(target) / src.name)
    if target != STDOUT and Path(target).exists() and not force:
        raise InputError(f"{target!r} exists; pass --force to overwrite it", source="command line", field="DEST")
    check_outputs(argparse.Namespace(dest=target), "dest")
    with OutputSet() as out:
        out.add(target, src.read_text(), "DEST")
    if target != STDOUT:
        print(f"wrote {target}; run it with: clustersim run {target}")
    return 0
