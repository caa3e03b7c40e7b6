"""The package's shape (STYLE.md, issue 29): no import cycle between its modules, no module over
600 lines, no folder over 15 modules, no private name (``_x``) imported from another module.

The check is written out here (not imported from the shared tools, whose copy may differ): every
``import`` / ``from ... import`` in a module, at any depth (function-level imports too), is an edge
to the module it names; ``from pkg import name`` is an edge to ``pkg.name`` when that is a module,
else to ``pkg``. Each rule is tested on a small made-up package first, so a check that cannot fail
is a failing test.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "onemodel_viewer"
MAX_LINES = 600
MAX_MODULES = 15  # per folder, __init__.py not counted


def modules(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` under the package folder ``root``."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def imports(name: str, path: Path, mods: dict[str, Path]) -> list[tuple[str, str | None]]:
    """(imported module, imported name or None) for every import statement in the module."""
    is_package = path.name == "__init__.py"
    base = name.split(".") + ([""] if is_package else [])
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            out.extend((a.name, None) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parent = base[: len(base) - node.level]
                target = ".".join(parent + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for a in node.names:
                full = f"{target}.{a.name}"
                out.append((full if full in mods else target, a.name))
    return out


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (iterative Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    counter = 0
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            v, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[v] = min(low[v], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def check(root: Path, max_lines: int = MAX_LINES, max_modules: int = MAX_MODULES) -> list[str]:
    """Every breach of the rules in the package at ``root``, one line each (empty: none)."""
    mods = modules(root)
    edges: dict[str, set[str]] = {m: set() for m in mods}
    out = []
    for name, path in mods.items():
        lines = path.read_text(encoding="utf-8").count("\n")
        if lines > max_lines:
            out.append(f"over {max_lines} lines: {path.relative_to(root.parent)} ({lines})")
        for target, imported in imports(name, path, mods):
            if target not in mods or target == name:
                continue
            edges[name].add(target)
            if imported and imported.startswith("_") and not imported.startswith("__"):
                out.append(f"private import: {name} imports {imported} from {target}")
    for comp in cycles(edges):
        out.append("import cycle: " + " <-> ".join(comp))
    for folder in sorted({p.parent for p in mods.values()}):
        count = sum(1 for p in folder.glob("*.py") if p.name != "__init__.py")
        if count > max_modules:
            out.append(f"over {max_modules} modules: {folder.relative_to(root.parent)} ({count})")
    return out


def test_the_package_keeps_the_house_rules():
    assert check(PACKAGE) == []


# The check itself, on made-up packages: each rule must be able to fail.

def make(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "pkg"
    for rel, text in {"__init__.py": "", **files}.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return root


def test_a_clean_package_passes(tmp_path):
    root = make(tmp_path, {"a.py": "from . import b\nfrom .b import thing\n", "b.py": "thing = 1\n"})
    assert check(root) == []


@pytest.mark.parametrize("files, cycle", [
    ({"a.py": "from . import b\n", "b.py": "from .a import x\n"}, "pkg.a <-> pkg.b"),
    # a function-level import closes a cycle too, and absolute imports count like relative ones
    ({"a.py": "def f():\n    import pkg.sub.c\n", "sub/__init__.py": "",
      "sub/c.py": "from ..b import y\n", "b.py": "from pkg import a\n"}, "pkg.a <-> pkg.b <-> pkg.sub.c"),
])
def test_an_import_cycle_fails(tmp_path, files, cycle):
    assert check(make(tmp_path, files)) == [f"import cycle: {cycle}"]


def test_a_long_module_fails(tmp_path):
    root = make(tmp_path, {"long.py": "x = 1\n" * 601, "ok.py": "x = 1\n" * 600})
    assert check(root) == ["over 600 lines: pkg/long.py (601)"]


def test_a_crowded_folder_fails(tmp_path):
    files = {f"many/m{i}.py": "" for i in range(16)} | {"many/__init__.py": ""}
    files |= {f"fine/m{i}.py": "" for i in range(15)} | {"fine/__init__.py": ""}
    assert check(make(tmp_path, files)) == ["over 15 modules: pkg/many (16)"]


def test_a_private_name_imported_across_modules_fails(tmp_path):
    root = make(tmp_path, {"a.py": "from .b import _helper, __version__, public\n",
                           "b.py": "_helper = public = __version__ = 1\n"})
    assert check(root) == ["private import: pkg.a imports _helper from pkg.b"]
