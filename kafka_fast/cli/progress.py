"""A progress display that is a no-op unless a person is watching a terminal."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any


class Progress(AbstractContextManager):
    """Counts work done; shows a rich progress bar on stderr when ``enabled``."""

    def __init__(self, description: str, total: int | None, enabled: bool) -> None:
        self._bar: Any = None
        self._task: Any = None
        if enabled:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                TextColumn,
                TimeElapsedColumn,
            )
            from rich.progress import Progress as RichProgress

            self._bar = RichProgress(
                TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                TimeElapsedColumn(), console=Console(stderr=True), transient=True,
            )
            self._task = self._bar.add_task(description, total=total)

    def __enter__(self) -> Progress:
        if self._bar is not None:
            self._bar.start()
        return self

    def advance(self, n: int = 1) -> None:
        """Record ``n`` more units done."""
        if self._bar is not None:
            self._bar.advance(self._task, n)

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()
