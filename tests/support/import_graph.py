"""The import graph of tipbench's source, read from the files (nothing is imported).

Every import counts: at the top of a module, inside a function (a lazy import), or under
`if TYPE_CHECKING:` (a circle of types is a circle all the same). A module is named by its
dotted path (`tipbench.compare._render`); its package is the first name under `tipbench`
(`compare`), or the module itself for the shared private modules at the top (`_errors`).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = "tipbench"


@dataclass(frozen=True)
class Import:
    """One import of a tipbench module: who imports what, and the line."""

    importer: str
    target: str  # a module, or a name in a module (`tipbench.stats.ALPHA`)
    line: int

    @property
    def where(self) -> str:
        return f"{self.importer}:{self.line} imports {self.target}"


def module_name(path: Path, src: Path) -> str:
    parts = path.relative_to(src).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_of(module: str) -> str:
    """`compare` for `tipbench.compare._render`; `_errors` for `tipbench._errors`."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def is_package_init(module: str, modules: dict[str, Path]) -> bool:
    return modules[module].name == "__init__.py"


def modules_under(src: Path) -> dict[str, Path]:
    """Every module of the tipbench package under `src`, by dotted name."""
    return {module_name(path, src): path for path in sorted((src / ROOT).rglob("*.py"))}


def _targets(node: ast.ImportFrom | ast.Import, importer: str, is_init: bool) -> Iterator[str]:
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    base = node.module or ""
    if node.level:  # relative: from the importer's package upwards
        package = importer.split(".") if is_init else importer.split(".")[:-1]
        anchor = package[: len(package) - node.level + 1]
        base = ".".join([*anchor, *([node.module] if node.module else [])])
    yield from (f"{base}.{alias.name}" for alias in node.names)


def imports(modules: dict[str, Path]) -> list[Import]:
    """Every import of a tipbench module by a tipbench module, resolved to a module where the
    imported name is one (`from tipbench.compare import _log` is the module `_log`)."""
    found: list[Import] = []
    for importer, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        is_init = path.name == "__init__.py"
        for node in ast.walk(tree):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            for target in _targets(node, importer, is_init):
                if target == ROOT or target.startswith(f"{ROOT}."):
                    found.append(Import(importer, target, node.lineno))
    return found


def module_of(target: str, modules: dict[str, Path]) -> str:
    """The module an import target is, or holds the name of."""
    return target if target in modules else target.rsplit(".", 1)[0]


def cycles(nodes: list[str], edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan, 1972): each is a set
    of modules that import one another in a circle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in sorted(edges.get(node, ())):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in nodes:
        if node not in index:
            visit(node)
    return found
