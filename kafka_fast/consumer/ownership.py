"""A debug check that each field of consumer state has one writing thread.

Off by default and free when off: with ``KAFKA_FAST_CHECK_OWNERS=1`` in the environment at
import time (or inside ``checking()``), the classes marked ``@owned`` record, per object, the
thread that first writes each field after construction; a write from another thread raises
``OwnershipError`` (and is kept in ``violations``, since it may happen on the I/O thread).
The application thread is whichever thread calls the consumer: an application that calls one
consumer from several threads in turn is correct but fails this check.
"""

from __future__ import annotations

import os
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

#: the classes checked (filled by ``@owned``)
_CLASSES: list[type] = []
#: every second writer seen: (class name, field, first thread, second thread)
violations: list[tuple[str, str, str, str]] = []
#: class name -> objects checked (since the last ``checking()``)
watched: Counter[str] = Counter()


class OwnershipError(AssertionError):
    """A field of an owned object was written by a second thread."""


def _checked_setattr(self: Any, name: str, value: Any) -> None:
    object.__setattr__(self, name, value)
    try:
        writers = object.__getattribute__(self, "_writers")
    except AttributeError:  # still in __init__
        return
    me = threading.current_thread()
    first = writers.setdefault(name, me)
    if first is not me:
        entry = (type(self).__name__, name, first.name, me.name)
        violations.append(entry)
        raise OwnershipError(f"{entry[0]}.{name} written by thread {me.name!r}, owned by "
                             f"{first.name!r}")


def _arm(self: Any) -> None:
    """Start recording writers of ``self`` (end of ``__init__``)."""
    object.__setattr__(self, "_writers", {})
    watched[type(self).__name__] += 1


def owned(cls: type) -> type:
    """Mark ``cls`` (which has a ``_writers`` slot and calls ``armed(self)`` at the end of
    ``__init__``) as checked."""
    _CLASSES.append(cls)
    if ENABLED:
        _install(cls)
    return cls


def armed(obj: Any) -> None:
    """Called at the end of an owned class's ``__init__``: from here on writes are checked."""
    if ENABLED:
        _arm(obj)


def _install(cls: type) -> None:
    cls.__setattr__ = _checked_setattr  # type: ignore[assignment]


def _uninstall(cls: type) -> None:
    if "__setattr__" in cls.__dict__:
        del cls.__setattr__


ENABLED = os.environ.get("KAFKA_FAST_CHECK_OWNERS", "") not in ("", "0")


@contextmanager
def checking() -> Iterator[list[tuple[str, str, str, str]]]:
    """Check owned objects created inside the block; yields the list of violations."""
    global ENABLED
    was = ENABLED
    ENABLED = True
    for cls in _CLASSES:
        _install(cls)
    del violations[:]
    watched.clear()
    try:
        yield violations
    finally:
        ENABLED = was
        if not was:
            for cls in _CLASSES:
                _uninstall(cls)
