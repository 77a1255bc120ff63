"""Requests whose fields depend on the version the connection negotiates.

The consumer fills every field any version may carry; ``versioned`` wraps such a request so
that, once the version is chosen, the fields that version does not have are reset to their
schema defaults (so a new broker gets the new fields and an old broker the old ones).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from ..net.request import VersionedRequest


def fit(obj: Any, version: int) -> Any:
    """Reset, recursively, the fields of ``obj`` that ``version`` does not carry."""
    for f in obj.FIELDS:
        if not f.present(version):
            try:
                delattr(obj, f.attr)
            except AttributeError:
                pass
        elif f.struct is not None:
            value = getattr(obj, f.attr)
            if isinstance(value, list):
                for item in value:
                    fit(item, version)
            elif value is not None:
                fit(value, version)
    return obj


def versioned(cls: type, make: Callable[[], Any], max_version: int | None = None
              ) -> VersionedRequest:
    """A request built by ``make()`` and fitted to the version the connection picks."""
    return VersionedRequest(cls, lambda version: fit(make(), version), max_version)


def versioned_message(msg: Any, max_version: int | None = None) -> VersionedRequest:
    """``msg`` (built now, from values fixed now) fitted to the version picked later."""
    return VersionedRequest(type(msg), lambda version: fit(copy.deepcopy(msg), version),
                            max_version)
