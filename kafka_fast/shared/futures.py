"""Settling Futures that a caller may already have cancelled."""

from __future__ import annotations

from concurrent.futures import Future, InvalidStateError
from typing import Any


def settle_all(futures: list[Future], result: Any = None,
               error: BaseException | None = None) -> None:
    """Resolve (or fail, with ``error``) every Future not already done or cancelled."""
    for fut in futures:
        try:
            if error is not None:
                fut.set_exception(error)
            else:
                fut.set_result(result)
        except InvalidStateError:
            pass
