"""Measure the house: axlint's internal import graph, its import cycles and its longest modules.

``python tools/house.py`` prints the figures; ``--dot FILE`` writes the module graph for Graphviz, one node per
module, grouped by package. Imports are read with ``ast`` (every ``import`` / ``from ... import`` of an axlint
module, at any depth of the file, lazy imports inside functions included, imports under ``if TYPE_CHECKING:``
left out, and the submodules a package's ``MODULES`` tuple names for ``importlib``), so the graph is every import
that can run, not only what Python happens to load first.
"""
from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "axlint"


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted((ROOT / PACKAGE).rglob("*.py"))}


def _resolve(name: str, known: set[str]) -> str | None:
    """The longest known module that ``name`` names or lies in (``axlint.a.b.c`` -> ``axlint.a.b``)."""
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def imports(mod: str, path: Path, known: set[str]) -> set[str]:
    """axlint modules that ``mod`` imports (relative imports resolved; ``from pkg import sub`` names sub)."""
    package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    found: set[str] = set()
    for node in _runtime_nodes(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            names = [f"{base}.{a.name}" for a in node.names] + [base]
        else:
            continue
        for name in names:
            if name.startswith(PACKAGE) and (target := _resolve(name, known)) and target != mod:
                found.add(target)
                break
    if path.name == "__init__.py":  # a package that imports the submodules listed in MODULES with importlib
        found |= {f"{mod}.{sub}" for sub in _listed_modules(path) if f"{mod}.{sub}" in known}
    return found


def _listed_modules(path: Path) -> list[str]:
    """The names of a package's ``MODULES = (...)`` tuple, which its ``__init__`` imports dynamically."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "MODULES" for t in node.targets):
            return [e.value for e in getattr(node.value, "elts", []) if isinstance(e, ast.Constant)]
    return []


def _runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node of the tree except those under `if TYPE_CHECKING:`, which are for the type checker and are never
    imported at run time."""
    out: list[ast.AST] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        out.append(node)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and getattr(child.test, "id", getattr(child.test, "attr", None)) == "TYPE_CHECKING":
                stack.extend(child.orelse)
                continue
            stack.append(child)
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each a set of modules in a circle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    sys.setrecursionlimit(10_000)

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def package_of(mod: str) -> str:
    parts = mod.split(".")
    return ".".join(parts[:2]) if len(parts) > 2 or mod in {f"{PACKAGE}.{p.name}" for p in (ROOT / PACKAGE).iterdir()
                                                              if p.is_dir()} else PACKAGE


def _top(mod: str) -> str:
    """`axlint.memory.solver` -> `memory`; `axlint.run` -> `run`."""
    parts = mod.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dot", type=Path, help="write the module import graph as Graphviz DOT")
    parser.add_argument("--layers", action="store_true",
                        help="print the graph folded to axlint's top-level modules and packages, one line each")
    args = parser.parse_args(argv)
    found = modules()
    known = set(found)
    graph = {m: imports(m, p, known) for m, p in found.items()}
    circles = cycles(graph)
    lines = sorted(((len(p.read_text(encoding="utf-8").splitlines()), m) for m, p in found.items()), reverse=True)
    edges = sum(len(v) for v in graph.values())
    print(f"modules: {len(found)}  import edges: {edges}  lines: {sum(n for n, _ in lines)}")
    print(f"import circles (strongly connected groups): {len(circles)}, "
          f"modules inside them: {sum(len(c) for c in circles)}")
    for c in circles:
        print("  circle:", " <-> ".join(x.removeprefix(PACKAGE + ".") for x in c))
    print("longest modules:", ", ".join(f"{m.removeprefix(PACKAGE + '.')} {n}" for n, m in lines[:5]))
    if args.layers:
        folded: dict[str, set[str]] = {}
        for m, targets in graph.items():
            src = _top(m)
            folded.setdefault(src, set()).update(_top(t) for t in targets if _top(t) != src)
        for src in sorted(folded):
            print(f"  {src} -> {', '.join(sorted(folded[src])) or '(nothing)'}")
    if args.dot:
        out = ["digraph axlint {", "  rankdir=LR; node [shape=box, fontsize=10];"]
        groups: dict[str, list[str]] = {}
        for m in found:
            groups.setdefault(package_of(m), []).append(m)
        for i, (g, members) in enumerate(sorted(groups.items())):
            out.append(f'  subgraph cluster_{i} {{ label="{g}";')
            out += [f'    "{m}";' for m in sorted(members)]
            out.append("  }")
        in_circle = {m for c in circles for m in c}
        for m in sorted(graph):
            for t in sorted(graph[m]):
                colour = ' [color=red]' if m in in_circle and t in in_circle else ""
                out.append(f'  "{m}" -> "{t}"{colour};')
        out.append("}")
        args.dot.write_text("\n".join(out) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
