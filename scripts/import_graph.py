"""The import structure of the code: circles, arrows up, and imports made inside functions.

    python scripts/import_graph.py [--root DIR] [--out PREFIX]

Reads every ``.py`` file under ``gdl/`` and ``agent/`` of the checkout (or ``--root``) with
``ast`` (nothing is imported or run) and writes, with ``--out docs/architecture/imports``,
``PREFIX.md`` (the figures and every finding, file by file) and ``PREFIX.png`` (the rooms of
``agent/`` and ``gdl/`` on their floors, arrows up drawn in orange); without ``--out`` the
figures are printed.

Words, as ARCHITECTURE.md uses them: a *room* is a file or a folder seen from the folder that
holds it (``agent/search/`` is one room of ``agent/``); an *arrow* A -> B: a file of A imports
a file of B, wherever in the file the import stands; a *circle*: files that import each other
in a loop; *floors*: a room stands one floor above the highest room it imports (the ground
is floor 1; a loop between rooms is cut at the first arrow met); an *arrow up*: an arrow
between two rooms of one folder to a room on the same floor or higher, which only a loop
between rooms makes (one arrow of each such loop runs up).  A *function-level import* is one inside a function or class body; the project
keeps one only where it saves a real start-up cost (numba, SWI-Prolog, matplotlib, ...) and
says which in a comment: on the line or the two above, or once for the module in a comment
line that starts with "# Imports inside functions".
"""
from __future__ import annotations

import argparse
import ast
import os
import sys
from collections import defaultdict
from pathlib import Path

PACKAGES = ("gdl", "agent")

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from gdl.analysis import strongly_connected  # noqa: E402


def module_files(root: Path) -> dict:
    """Module name -> path, for every package file (tests, scripts and data left out)."""
    out = {}
    for pkg in PACKAGES:
        for p in sorted((root / pkg).rglob("*.py")):
            rel = p.relative_to(root).with_suffix("")
            parts = list(rel.parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = p
    return out


def _resolve(mod: str, is_pkg: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(mod: str, path: Path, modules: dict) -> list:
    """(target module, line, inside a function, comment nearby) for each import of the
    package's own modules."""
    text = path.read_text()
    lines = text.splitlines()
    tree = ast.parse(text)
    is_pkg = path.name == "__init__.py"
    # one comment at the top of a module may say why all its functions import inside them
    noted = any(line.lower().startswith("# imports inside functions") for line in lines)
    found = []

    def nearest(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    def visit(node, inner: bool):
        for child in ast.iter_child_nodes(node):
            deeper = inner or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            if isinstance(child, ast.Import):
                targets = [a.name for a in child.names]
            elif isinstance(child, ast.ImportFrom):
                base = _resolve(mod, is_pkg, child)
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in child.names]
            else:
                visit(child, deeper)
                continue
            ln = child.lineno
            window = lines[max(0, ln - 3):ln]
            commented = noted or any("#" in w for w in window)
            for t in targets:
                t = nearest(t)
                # a module's own packages are imported before it anyway: no arrow of its own
                if t and t != mod and not mod.startswith(t + "."):
                    found.append((t, ln, inner, commented))
            if inner:
                # third-party imports inside functions are counted too (start-up cost)
                for t in targets:
                    if t.split(".")[0] not in PACKAGES:
                        found.append(("~" + t.split(".")[0], ln, True, commented))

    visit(tree, False)
    return found


def sccs(nodes, edges) -> list:
    """Strongly connected components with more than one node (Tarjan's, as the GDL analysis
    finds recursion)."""
    graph = defaultdict(set, {a: set(b) for a, b in edges.items()})
    return sorted(c for c in strongly_connected(list(nodes), graph) if len(c) > 1)


def room_of(mod: str, folder: str) -> str | None:
    """The room of ``folder`` (a dotted package) that holds ``mod``, or None."""
    if folder and not mod.startswith(folder + "."):
        return None
    rest = mod[len(folder) + 1:] if folder else mod
    return (folder + "." if folder else "") + rest.split(".")[0] if rest else None


def floors(rooms, edges) -> dict:
    """Floor of each room: 1 + the highest floor it imports (ground 1), loops cut at the
    first arrow met."""
    out, busy = {}, set()

    def f(r):
        if r in out:
            return out[r]
        if r in busy:
            return 0
        busy.add(r)
        out[r] = 1 + max([f(t) for t in edges.get(r, ()) if t != r] or [0])
        busy.discard(r)
        return out[r]
    for r in rooms:
        f(r)
    return out


def analyse(root: Path) -> dict:
    modules = module_files(root)
    imports = {m: imports_of(m, p, modules) for m, p in modules.items()}
    edges = defaultdict(set)
    top_edges = defaultdict(set)        # made at a module's top level (run at import)
    for m, found in imports.items():
        for t, _, fn, _ in found:
            if not t.startswith("~"):
                edges[m].add(t)
                if not fn:
                    top_edges[m].add(t)
    file_circles = sccs(sorted(modules), edges)
    # folders: every package, seen as rooms
    folders = [""] + sorted({m for m in modules if (root / m.replace(".", "/") / "__init__.py").exists()})
    ups, room_graphs = [], {}
    for folder in folders:
        redges, rtop = defaultdict(set), defaultdict(set)
        names = defaultdict(set)
        for m, ts in edges.items():
            a = room_of(m, folder)
            if a is None:
                continue
            for t in ts:
                b = room_of(t, folder)
                if b is None or a == b:
                    continue
                redges[a].add(b)
                if t in top_edges[m]:
                    rtop[a].add(b)
                names[(a, b)].add((m, t))
        rooms = sorted({room_of(m, folder) for m in modules if room_of(m, folder)})
        # floors: within a loop between rooms only the arrows made at the top of modules
        # count, so the arrow that runs up is one made inside a function (where the loop hid)
        comp_of = {r: i for i, comp in enumerate(sccs(rooms, redges)) for r in comp}
        kept = {a: {b for b in redges[a]
                    if b in rtop[a] or a not in comp_of or comp_of.get(b) != comp_of[a]} for a in rooms}
        fl = floors(rooms, kept)
        room_graphs[folder] = (rooms, redges, fl)
        for a in rooms:
            for b in sorted(redges[a]):
                if fl[b] >= fl[a]:
                    ups.append((folder or "(top)", a, b, sorted(names[(a, b)])))
    inner = [(modules[m].relative_to(root).as_posix(), ln, t.lstrip("~"), commented)
             for m, found in imports.items() for t, ln, fn, commented in found if fn]
    inner = sorted(set(inner))
    return {"modules": modules, "edges": edges, "file_circles": file_circles, "ups": ups,
            "inner": inner, "room_graphs": room_graphs}


def report(res: dict, root: Path, note: str = "") -> str:
    mods = res["modules"]
    rel = {m: p.relative_to(root).as_posix() for m, p in mods.items()}
    n_edges = sum(len(v) for v in res["edges"].values())
    inner = res["inner"]
    lines = ["# Import structure", "",
             "Written by `python scripts/import_graph.py --out PREFIX` from the code's own imports "
             "(read with `ast`, nothing run). Words: ARCHITECTURE.md, *Imports*."]
    lines += ["", note, ""] if note else [""]
    lines += ["| figure | count |", "|---|---|",
              f"| package files (`gdl/`, `agent/`) | {len(mods)} |",
              f"| import arrows between them (file to file) | {n_edges} |",
              f"| circles of files | {len(res['file_circles'])} |",
              f"| arrows up (loops between the rooms of one folder) | {len(res['ups'])} |",
              f"| imports inside a function or class (all modules) | {len(inner)} |",
              f"| of them with no comment on the line or the two above | {sum(1 for x in inner if not x[3])} |",
              "", "## Circles of files", ""]
    if not res["file_circles"]:
        lines.append("None.")
    for comp in res["file_circles"]:
        lines.append("- " + ", ".join(f"`{rel[m]}`" for m in comp))
        members = set(comp)
        for m in comp:
            for t in sorted(res["edges"][m] & members):
                lines.append(f"  - `{rel[m]}` -> `{rel[t]}`")
    lines += ["", "## Arrows up", ""]
    if not res["ups"]:
        lines.append("None.")
    for folder, a, b, pairs in res["ups"]:
        how = "; ".join(f"`{rel[m]}` -> `{rel[t]}`" for m, t in pairs)
        lines.append(f"- in `{folder}`: `{a}` -> `{b}` ({how})")
    lines += ["", "## Imports inside functions", "",
              "File, line, what is imported, and whether a comment stands on the line or the two "
              "above it (the comment should say which start-up cost the import saves).", "",
              "| file | line | imports | comment |", "|---|---|---|---|"]
    for path, ln, t, c in inner:
        lines.append(f"| `{path}` | {ln} | `{t}` | {'yes' if c else 'no'} |")
    return "\n".join(lines) + "\n"


def draw(res: dict, out: Path) -> None:
    """The rooms of ``agent`` and ``gdl`` on their floors, ground at the bottom; arrows
    between rooms grey, arrows up orange."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [f for f in ("agent", "gdl") if f in res["room_graphs"]]
    fig, axes = plt.subplots(1, len(panels), figsize=(8 * len(panels), 9),
                             gridspec_kw={"width_ratios": [3, 1][:len(panels)]})
    ups = {(a, b) for _, a, b, _ in res["ups"]}
    for ax, folder in zip(axes, panels):
        rooms, redges, fl = res["room_graphs"][folder]
        top = max(fl.values())
        by_floor = defaultdict(list)
        for r in rooms:
            by_floor[fl[r]].append(r)
        pos = {}
        for f, rs in by_floor.items():
            for i, r in enumerate(sorted(rs)):
                pos[r] = ((i + 1) / (len(rs) + 1), f)
        for a in rooms:
            for b in redges.get(a, ()):
                up = (a, b) in ups
                (x0, y0), (x1, y1) = pos[a], pos[b]
                ax.annotate("", xy=(x1, y1), xytext=(x0, y0),
                            arrowprops=dict(arrowstyle="->", lw=2.2 if up else 0.5,
                                            color="#e07000" if up else "#9aa5b1", alpha=1 if up else 0.6,
                                            shrinkA=9, shrinkB=9))
        for r, (x, y) in pos.items():
            label = r.split(".")[-1] + ("/" if r.replace(".", "/") in res["packages"] else "")
            ax.text(x, y, label, ha="center", va="center", fontsize=8,
                    bbox=dict(boxstyle="round,pad=0.3", fc="#e8eef6", ec="#4a5a6a", lw=0.6))
        ax.set_ylim(0.3, top + 0.7)
        ax.set_xlim(0, 1)
        ax.set_yticks(range(1, top + 1))
        ax.set_ylabel("floor (1 = ground)")
        ax.set_xticks([])
        n_up = sum(1 for u in res["ups"] if u[0] == folder)
        ax.set_title(f"{folder}/: {len(rooms)} rooms, {sum(len(v) for v in redges.values())} arrows, "
                     f"{n_up} up (orange)", fontsize=10)
        for s in ("top", "right", "bottom"):
            ax.spines[s].set_visible(False)
    circles = len(res["file_circles"])
    fig.suptitle(f"Rooms on floors (a room stands above what it imports); circles of files: {circles}",
                 fontsize=11)
    fig.tight_layout()
    tmp = out.with_name(out.name + ".tmp.png")
    fig.savefig(tmp, dpi=80)
    os.replace(tmp, out)
    plt.close(fig)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=str(Path(__file__).resolve().parent.parent),
                    help="the checkout to read (default: this one)")
    ap.add_argument("--out", help="write PREFIX.md and PREFIX.png (e.g. docs/architecture/imports-after)")
    ap.add_argument("--note", default="", help="a line under the title (what was measured)")
    a = ap.parse_args(argv)
    root = Path(a.root).resolve()
    if not all((root / p).is_dir() for p in PACKAGES):
        print(f"import_graph: {root} has no {' and '.join(PACKAGES)} folders", file=sys.stderr)
        return 2
    res = analyse(root)
    res["packages"] = {m.replace(".", "/") for m in res["modules"]
                       if (root / m.replace(".", "/") / "__init__.py").exists()}
    text = report(res, root, a.note)
    if not a.out:
        print(text.split("## Imports inside")[0])
        return 0
    prefix = Path(a.out)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    tmp = prefix.with_name(prefix.name + ".md.tmp")
    tmp.write_text(text)
    os.replace(tmp, prefix.with_name(prefix.name + ".md"))
    draw(res, prefix.with_name(prefix.name + ".png"))
    print(text.split("## Circles")[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
