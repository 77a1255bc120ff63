"""Chooses the compiled core or its pure-Python twin.

``KAFKA_FAST_NO_EXTENSIONS=1`` selects the pure-Python implementation everywhere. Without it
the compiled modules are used; if they are missing (not built), the pure-Python ones are used
and ``NATIVE`` is False, with a warning.
"""

from __future__ import annotations

import importlib
import os
import warnings
from types import ModuleType

FORCED_PURE = os.environ.get("KAFKA_FAST_NO_EXTENSIONS", "") not in ("", "0")


def load(native_name: str, pure_name: str) -> tuple[ModuleType, bool]:
    """Import ``kafka_fast._native.<native_name>`` or fall back to ``kafka_fast._pure.<pure_name>``.

    Returns the module and whether it is the compiled one.
    """
    if not FORCED_PURE:
        try:
            return importlib.import_module(f"kafka_fast._native.{native_name}"), True
        except ImportError as exc:
            warnings.warn(
                f"kafka_fast compiled module {native_name} is not available ({exc}); "
                "using the pure-Python implementation",
                RuntimeWarning,
                stacklevel=3,
            )
    return importlib.import_module(f"kafka_fast._pure.{pure_name}"), False
