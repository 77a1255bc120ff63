"""Check two rules of the package layout.

1. No module reaches into another object's underscore attributes: ``x._name`` where ``x`` is
   not ``self``/``cls``/``super()`` is allowed only if ``_name`` is defined in the same module
   (a class comparing itself with another of its kind). ALL-CAPS names such as
   ``KafkaError._MSG_TIMED_OUT`` are public constants; names that no module of the package
   defines (the standard library's) are not this check's business.
2. No import cycles between the sub-packages of ``kafka_fast``: every import that runs counts,
   those inside functions and methods included; only those under ``if TYPE_CHECKING:`` do not.

Usage: python tools/check_layers.py [PACKAGE_DIR]   (exits 1 listing every violation)
"""

from __future__ import annotations

import ast
import os
import sys
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT = os.path.join(os.path.dirname(HERE), "kafka_fast")
#: generated code follows its generator's rules
SKIP = {os.path.join("protocol", "messages")}


def _modules(root: str) -> dict[str, ast.Module]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        if rel in SKIP:
            dirnames[:] = []
            continue
        for fn in filenames:
            if fn.endswith(".py"):
                path = os.path.join(dirpath, fn)
                with open(path, encoding="utf-8") as fh:
                    out[os.path.relpath(path, root)] = ast.parse(fh.read(), path)
    return out


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__") and not name[1:].isupper()


def _defined(tree: ast.Module) -> set[str]:
    """Underscore names this module defines as attributes, methods or slots."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Name):
                    names.add(t.id)
                    if t.id == "__slots__" and node.value is not None:
                        for elt in ast.walk(node.value):
                            if isinstance(elt, ast.Constant) and isinstance(elt.value, str):
                                names.add(elt.value)
    return {n for n in names if _private(n)}


def private_access(modules: dict[str, ast.Module]) -> list[str]:
    defined = {path: _defined(tree) for path, tree in modules.items()}
    anywhere = set().union(*defined.values()) if defined else set()
    problems = []
    for path, tree in sorted(modules.items()):
        for node in ast.walk(tree):
            if not isinstance(node, ast.Attribute) or not _private(node.attr):
                continue
            v = node.value
            if isinstance(v, ast.Name) and v.id in ("self", "cls"):
                continue
            if isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id == "super":
                continue
            if node.attr in defined[path] or node.attr not in anywhere:
                continue
            problems.append(f"{path}:{node.lineno}: reaches into {ast.unparse(node)}")
    return problems


#: ``try: ... except* ...`` blocks (Python 3.11+)
_TRY_STAR: tuple[type, ...] = (ast.TryStar,) if hasattr(ast, "TryStar") else ()


def _runtime_imports(tree: ast.Module) -> list[ast.ImportFrom | ast.Import]:
    """Every import that can run: module level and inside functions, classes and blocks,
    outside ``if TYPE_CHECKING:``."""
    out: list[ast.ImportFrom | ast.Import] = []

    def visit(body: list[ast.stmt]) -> None:
        for stmt in body:
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                out.append(stmt)
            elif isinstance(stmt, ast.If):
                test = ast.unparse(stmt.test)
                if "TYPE_CHECKING" not in test:
                    visit(stmt.body)
                visit(stmt.orelse)
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                                   ast.With, ast.AsyncWith, ast.For, ast.AsyncFor, ast.While)):
                visit(stmt.body)  # imports inside functions run too: they count
                visit(getattr(stmt, "orelse", []))
            elif isinstance(stmt, ast.Match):
                for case in stmt.cases:
                    visit(case.body)
            elif isinstance(stmt, (ast.Try, *_TRY_STAR)):
                visit(stmt.body)
                for h in stmt.handlers:
                    visit(h.body)
                visit(stmt.orelse)
                visit(stmt.finalbody)

    visit(tree.body)
    return out


def _package_of(path: str) -> str:
    """The sub-package holding ``path``; a top-level module counts as its own package."""
    parts = path.split(os.sep)
    return parts[0] if len(parts) > 1 else parts[0][:-3]


def package_cycles(modules: dict[str, ast.Module]) -> list[str]:
    graph: dict[str, set[str]] = defaultdict(set)
    where: dict[tuple[str, str], str] = {}
    for path, tree in modules.items():
        pkg = _package_of(path)
        base = path.split(os.sep)[:-1]
        for imp in _runtime_imports(tree):
            targets = []
            if isinstance(imp, ast.ImportFrom):
                if imp.level:
                    up = base[:len(base) - (imp.level - 1)] if imp.level > 1 else base
                    mod = up + (imp.module.split(".") if imp.module else [])
                    if not imp.module:
                        mod = [*up, imp.names[0].name]
                    targets.append(mod)
                elif imp.module and imp.module.split(".")[0] == "kafka_fast":
                    targets.append(imp.module.split(".")[1:])
            else:
                for alias in imp.names:
                    if alias.name.split(".")[0] == "kafka_fast":
                        targets.append(alias.name.split(".")[1:])
            for mod in targets:
                if not mod:
                    continue
                other = mod[0]
                if other in ("__init__", "") or other == pkg:
                    continue
                if other != pkg:
                    graph[pkg].add(other)
                    where.setdefault((pkg, other), f"{path}:{imp.lineno}")
    problems = []
    seen: set[tuple[str, ...]] = set()
    for start in sorted(graph):
        stack = [(start, [start])]
        while stack:
            node, trail = stack.pop()
            for nxt in sorted(graph.get(node, ())):
                if nxt == start:
                    cycle = tuple(sorted(trail))
                    if cycle not in seen:
                        seen.add(cycle)
                        hops = [*trail, start]
                        detail = ", ".join(where[(a, b)] for a, b in zip(hops, hops[1:], strict=False))
                        problems.append(f"import cycle {' -> '.join(hops)} ({detail})")
                elif nxt not in trail and len(trail) < 6:
                    stack.append((nxt, [*trail, nxt]))
    return problems


ROOT = DEFAULT


def main(argv: list[str]) -> int:
    global ROOT
    ROOT = argv[1] if len(argv) > 1 else DEFAULT
    modules = _modules(ROOT)
    problems = private_access(modules) + package_cycles(modules)
    for p in problems:
        print(p)
    if problems:
        print(f"check_layers: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    print(f"check_layers: {len(modules)} modules, no private access across objects, "
          f"no import cycles between packages")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
