"""Keys that only a admin uses."""

from __future__ import annotations

from .table import Key

KEYS: list[Key] = []
