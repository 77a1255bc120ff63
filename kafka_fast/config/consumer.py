"""Keys that only a consumer uses."""

from __future__ import annotations

from .table import Key

KEYS: list[Key] = []
