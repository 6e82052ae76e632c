"""Names a package exports but imports on first use (PEP 562's module `__getattr__`), so that
what they need (uvicorn, httpx, the tracking store) loads only where they are used, and the
CLI starts without it.

    # in tipbench/<package>/__init__.py
    if TYPE_CHECKING:  # what type checkers and readers see
        from tipbench.<package>._remote import RemoteTarget
    else:
        __getattr__ = lazy_exports(__name__, {"RemoteTarget": "_remote"})
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """The module `__getattr__` of `package`: each name of `homes` is imported from its module
    (`homes[name]`, inside the package) when first asked for, then kept in the package."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{home}"), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
