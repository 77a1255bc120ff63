"""Clients cached per executor Python worker, keyed by role and configuration.

A PySpark worker runs one task at a time and, with ``spark.python.worker.reuse`` (the
default), many tasks one after another: caching lets every task of a worker share one
producer (and one consumer) instead of connecting anew. Clients are closed at interpreter
exit (``atexit``). PySpark's forking daemon ends its workers with ``os._exit``, which skips
``atexit``; nothing is lost then because every task flushes before it returns, and the
operating system closes the sockets. A client inherited through ``fork`` is never reused:
its I/O thread does not exist in the child.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import threading
from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeVar


class Closable(Protocol):
    """A cached client (a Producer or Consumer)."""

    def close(self) -> object: ...


C = TypeVar("C", bound=Closable)

log = logging.getLogger("kafka_fast.spark")

_lock = threading.Lock()
_clients: dict[tuple[str, str], Any] = {}
_owner_pid = os.getpid()
_atexit_registered = False


def config_key(conf: Mapping[str, Any]) -> str:
    """A stable text key for a configuration dict (callables by identity-free repr)."""
    return json.dumps({str(k): conf[k] for k in sorted(conf, key=str)}, sort_keys=True,
                      default=_describe)


def _describe(value: Any) -> str:
    name = getattr(value, "__qualname__", None) or type(value).__qualname__
    return f"<{getattr(value, '__module__', '')}.{name}>"


def cached(role: str, conf: Mapping[str, Any], factory: Callable[[dict], C]) -> C:
    """The worker's client for ``(role, conf)``, created with ``factory(dict(conf))`` once."""
    global _atexit_registered
    key = (role, config_key(conf))
    with _lock:
        _forget_if_forked()
        client = _clients.get(key)
        if client is None:
            client = factory(dict(conf))
            _clients[key] = client
            if not _atexit_registered:
                atexit.register(close_all)
                _atexit_registered = True
        return client


def discard(role: str, conf: Mapping[str, Any]) -> None:
    """Close and forget the cached client for ``(role, conf)`` (after a failed task)."""
    with _lock:
        client = _clients.pop((role, config_key(conf)), None)
    if client is not None:
        _close(client)


def close_all() -> None:
    """Close every cached client of this process."""
    with _lock:
        _forget_if_forked()
        clients = list(_clients.values())
        _clients.clear()
    for client in clients:
        _close(client)


def cached_count() -> int:
    """How many clients this process holds."""
    with _lock:
        _forget_if_forked()
        return len(_clients)


def _forget_if_forked() -> None:
    global _owner_pid
    if os.getpid() != _owner_pid:
        _clients.clear()
        _owner_pid = os.getpid()


def _close(client: Closable) -> None:
    try:
        client.close()
    except Exception:  # closing must not mask the outcome of the task that got here
        log.warning("closing a cached client %r failed", client, exc_info=True)
