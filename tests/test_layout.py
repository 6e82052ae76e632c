"""The layout of the code: the test tree collects whole, and the source keeps its public
faces, its one-way arrows between packages and its small modules (issue 33, item 4).

The map of which package may import which is the table of docs/development.md (one home:
the page a reader sees is the rule the test applies). There are no exceptions: phase 2 of
issue 33 emptied the allow-lists the policy loop needed.
"""

from __future__ import annotations

import re
import warnings
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from support.import_graph import (
    Import,
    cycles,
    imports,
    is_package_init,
    module_of,
    modules_under,
    package_of,
)

TESTS = Path(__file__).parent
REPO = TESTS.parent
SRC = REPO / "src"
DEVELOPMENT = REPO / "docs" / "development.md"
LONG_LINES = 400
"""Past this many lines a module is worth a look for two ideas in one file (a warning)."""
MAX_LINES = 600
"""No module passes this many lines: the house style's guidance has become a file too big."""

MODULES = modules_under(SRC)
"""The product's modules (the dev-only helpers of `tipbench_dev`, beside it, are not)."""
IMPORTS = imports(MODULES)


def test_test_modules_have_unique_names() -> None:
    """Two test files of one name in different folders stop the whole run at collection
    ("import file mismatch"): the folders have no __init__.py, by design."""
    names = Counter(path.name for path in TESTS.rglob("test_*.py"))
    assert [name for name, count in names.items() if count > 1] == []


def _may_import() -> dict[str, set[str]]:
    """The table of docs/development.md: each package and those it may import."""
    text = DEVELOPMENT.read_text(encoding="utf-8").split("## Which package may import which")[1]
    rows = re.findall(r"^\| `(\w+)` \| (.+?) \|$", text, re.MULTILINE)
    table = {package: set(re.findall(r"`(\w+)`", allowed)) for package, allowed in rows}
    for package, allowed in rows:
        if allowed == "every package above":
            table[package] = set(table) - {package}
    return table


def _packages() -> set[str]:
    return {package_of(m) for m in MODULES if package_of(m) and is_package_init(m, MODULES)}


def test_the_map_names_every_package_once_and_only_real_ones() -> None:
    table = _may_import()
    assert set(table) == _packages()
    assert all(allowed <= set(table) for allowed in table.values())


def test_every_arrow_between_packages_is_on_the_map() -> None:
    """A package imports only those of its row; the shared private modules at the top of
    tipbench (`_errors`, `_words`, …) are everyone's but `stats`'s."""
    table, packages = _may_import(), _packages()
    wrong: list[str] = []
    for imported in IMPORTS:
        source, target = package_of(imported.importer), package_of(imported.target)
        if source not in packages or source == target or not target:
            continue
        shared = target not in packages and source != "stats"
        if not shared and target not in table[source]:
            wrong.append(imported.where)
    assert wrong == []


def test_no_circle_between_packages() -> None:
    """The arrows run one way: no package (nor a shared module at the top) imports, through
    any others, one that imports it (the pipeline announces new scores through a hook, so
    that it does not import orchestration, which runs it)."""
    edges: dict[str, set[str]] = defaultdict(set)
    for imported in IMPORTS:
        source, target = package_of(imported.importer), package_of(imported.target)
        if source and target and source != target:
            edges[source].add(target)
    assert cycles(sorted(edges), edges) == []


def _private_module(imported: Import) -> bool:
    """The target is another package's private module (or a private name of its face)."""
    parts = module_of(imported.target, MODULES).split(".")
    name = imported.target.split(".")[-1]
    other = package_of(imported.target) != package_of(imported.importer)
    in_package = len(parts) > 2 and is_package_init(".".join(parts[:2]), MODULES)
    private = any(part.startswith("_") for part in parts[2:]) or name.startswith("_")
    return other and in_package and private and not name.startswith("__")


def test_no_module_imports_another_packages_private_module() -> None:
    found = {(i.importer, module_of(i.target, MODULES)) for i in IMPORTS if _private_module(i)}
    assert sorted(found) == []


def test_no_circle_between_the_modules_of_a_package() -> None:
    """Counting every import: lazy ones inside functions and those under TYPE_CHECKING."""
    edges: dict[str, set[str]] = defaultdict(set)
    for imported in IMPORTS:
        target = module_of(imported.target, MODULES)
        same = package_of(target) == package_of(imported.importer)
        if same and target in MODULES and not is_package_init(target, MODULES):
            edges[imported.importer].add(target)
    inits = {m for m in MODULES if is_package_init(m, MODULES)}
    nodes = sorted(set(MODULES) - inits)
    assert cycles(nodes, {m: e - inits for m, e in edges.items()}) == []


@pytest.mark.parametrize("root", ["tipbench", "tipbench_dev"])
def test_no_module_passes_the_line_limit(root: str) -> None:
    """Module length is guidance (STYLE.md): past `LONG_LINES` a warning names the module,
    and only far past it, `MAX_LINES`, does the layout fail."""
    sizes = {
        ".".join(path.relative_to(SRC).with_suffix("").parts): len(path.read_text().splitlines())
        for path in sorted((SRC / root).rglob("*.py"))
    }
    long = {module: lines for module, lines in sizes.items() if lines > LONG_LINES}
    if long:
        warnings.warn(
            f"modules past {LONG_LINES} lines (two ideas in one file?): {long}", stacklevel=1
        )
    assert {module: lines for module, lines in long.items() if lines > MAX_LINES} == {}


def test_stats_imports_nothing_of_tipbench_nor_mlflow() -> None:
    """The neutral core: numpy and scipy, no MLflow, no leaderboard, no other package."""
    reached = {
        imported.target
        for imported in IMPORTS
        if package_of(imported.importer) == "stats" and package_of(imported.target) != "stats"
    }
    assert reached == set()
    for module, path in MODULES.items():
        if package_of(module) == "stats":
            assert not re.search(r"^\s*(from|import) mlflow", path.read_text(), re.MULTILINE)
