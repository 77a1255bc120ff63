"""Requests whose fields depend on the version the connection negotiates."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kafka_fast.protocol.messages import API_INDEX


class VersionedRequest:
    """A request whose fields depend on the version: ``build(version)`` makes the message
    once the connection has picked the version (``send`` accepts it like a message).

    ``cls`` is the request class (its API key and version range are used for negotiation);
    the highest version is at most the one the client negotiates for that API (the class may
    speak newer ones, whose new fields the client's code does not fill).
    """

    __slots__ = ("cls", "build", "API_KEY", "NAME", "MIN_VERSION", "MAX_VERSION")

    def __init__(self, cls: Any, build: Callable[[int], Any],
                 max_version: int | None = None) -> None:
        self.cls = cls
        self.build = build
        self.API_KEY = cls.API_KEY
        self.NAME = cls.NAME
        self.MIN_VERSION = cls.MIN_VERSION
        highest = API_INDEX[cls.API_KEY][6]
        self.MAX_VERSION = highest if max_version is None else min(max_version, highest)
