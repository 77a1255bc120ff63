"""Chooses the compiled core or its pure-Python twin.

``KAFKA_FAST_NO_EXTENSIONS=1`` selects the pure-Python implementation everywhere. Without it
the compiled modules are used; if they are missing (not built), the pure-Python ones are used
and ``NATIVE`` is False, with a warning. Compiled modules live in ``kafka_fast._native`` (the
record engine) or beside the package they serve (``kafka_fast.producer._produce``); every
twin lives in ``kafka_fast._pure``.
"""

from __future__ import annotations

import importlib
import os
import warnings
from types import ModuleType

FORCED_PURE = os.environ.get("KAFKA_FAST_NO_EXTENSIONS", "") not in ("", "0")


def load(native_name: str, pure_name: str,
         package: str = "kafka_fast._native") -> tuple[ModuleType, bool]:
    """Import ``<package>.<native_name>`` or fall back to ``kafka_fast._pure.<pure_name>``.

    Returns the module and whether it is the compiled one.
    """
    if not FORCED_PURE:
        try:
            return importlib.import_module(f"{package}.{native_name}"), True
        except ImportError as exc:
            warnings.warn(
                f"kafka_fast compiled module {package}.{native_name} is not available ({exc}); "
                "using the pure-Python implementation",
                RuntimeWarning,
                stacklevel=3,
            )
    return importlib.import_module(f"kafka_fast._pure.{pure_name}"), False
