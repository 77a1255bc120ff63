"""Keys that only a producer uses."""

from __future__ import annotations

from .table import Key

KEYS: list[Key] = []
