"""Requests whose fields depend on the version the connection negotiates.

A client fills every field any version may carry; ``versioned`` wraps such a request so
that, once the version is chosen, the fields that version does not have are reset to their
schema defaults (so a new broker gets the new fields and an old broker the old ones).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from kafka_fast.protocol.messages import API_INDEX


class VersionedRequest:
    """A request whose fields depend on the version: ``build(version)`` makes the message
    once the connection has picked the version (``send`` accepts it like a message).

    ``cls`` is the request class (its API key and version range are used for negotiation);
    the highest version is at most the one the client negotiates for that API (the class may
    speak newer ones, whose new fields the client's code does not fill). ``decode_response``
    (``(body, version, nogil_bytes) -> response``, as a FramedRequest's), when given, reads the
    response instead of the generated codec of ``cls``'s response class.
    """

    __slots__ = ("cls", "build", "decode_response", "API_KEY", "NAME", "MIN_VERSION",
                 "MAX_VERSION")

    def __init__(self, cls: Any, build: Callable[[int], Any],
                 max_version: int | None = None,
                 decode_response: Callable[[Any, int, int], Any] | None = None) -> None:
        self.cls = cls
        self.build = build
        self.decode_response = decode_response
        self.API_KEY = cls.API_KEY
        self.NAME = cls.NAME
        self.MIN_VERSION = cls.MIN_VERSION
        highest = API_INDEX[cls.API_KEY][6]
        self.MAX_VERSION = highest if max_version is None else min(max_version, highest)


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
