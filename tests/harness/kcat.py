"""Locate kcat, the independent librdkafka-based client used for interop tests."""

from __future__ import annotations

import shutil


def kcat_path() -> str | None:
    """Path of ``kcat`` (or the older name ``kafkacat``), or None when not installed."""
    return shutil.which("kcat") or shutil.which("kafkacat")
