"""Running application callbacks on the event loop from a client's worker thread.

A callback the client invokes on one of its threads (a rebalance callback inside ``poll()``,
``error_cb``, ...) runs on the event loop while that thread waits. Client calls the callback
awaits are handed back to the waiting thread (``reentrant_call``), as the synchronous clients
run them on the thread of their callback.

The AIOProducer's callbacks (``error_cb``, ``throttle_cb``, ``stats_cb``) are ``detached``
instead: handed to the loop without waiting, so a slow callback, or one that awaits a delivery,
never holds up the thread that serves delivery reports.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import logging
import queue
from collections.abc import Callable
from typing import Any

#: Configuration entries that hold application callbacks.
CONFIG_CALLBACKS = ("error_cb", "throttle_cb", "stats_cb", "on_commit")

_DONE = object()

log = logging.getLogger("kafka_fast.aio")


class _Session:
    """A client thread waiting while an application callback runs on the loop."""

    def __init__(self, owner: object) -> None:
        self.owner = owner
        self.tasks: queue.SimpleQueue = queue.SimpleQueue()

    def serve_until_done(self, loop: asyncio.AbstractEventLoop) -> None:
        while True:
            task = self.tasks.get()
            if task is _DONE:
                return
            fn, args, future = task
            try:
                result = fn(*args)
            except BaseException as exc:  # handed to the awaiting coroutine
                loop.call_soon_threadsafe(_settle, future, None, exc)
            else:
                loop.call_soon_threadsafe(_settle, future, result, None)


def _settle(future: asyncio.Future, result: Any, exc: BaseException | None) -> None:
    if future.done():
        return
    if exc is None:
        future.set_result(result)
    else:
        future.set_exception(exc)


_session: contextvars.ContextVar[_Session | None] = contextvars.ContextVar(
    "kafka_fast_aio_callback_session", default=None)


def on_loop(loop: asyncio.AbstractEventLoop, callback: Callable[..., Any], owner: object,
            first_arg: object = None) -> Callable[..., Any]:
    """A plain function for a client thread: runs ``callback`` (a coroutine function or a
    plain one) on ``loop``, serving ``owner``'s re-entrant calls until it returns. With
    ``first_arg``, the callback's first argument is replaced by it (the asyncio client instead
    of the synchronous one)."""

    def run(*args: Any) -> Any:
        if first_arg is not None:
            args = (first_arg, *args[1:])
        session = _Session(owner)

        async def call() -> Any:
            token = _session.set(session)
            try:
                result = callback(*args)
                if inspect.isawaitable(result):
                    result = await result
                return result
            finally:
                _session.reset(token)
                session.tasks.put(_DONE)

        done = asyncio.run_coroutine_threadsafe(call(), loop)
        session.serve_until_done(loop)
        return done.result()

    return run


def reentrant_call(owner: object, loop: asyncio.AbstractEventLoop, fn: Callable[..., Any],
                   args: tuple) -> asyncio.Future | None:
    """When the running coroutine is inside one of ``owner``'s callbacks, hand ``fn(*args)``
    to the client thread waiting for that callback and return a future of its result;
    otherwise None."""
    session = _session.get()
    if session is None or session.owner is not owner:
        return None
    future = loop.create_future()
    session.tasks.put((fn, args, future))
    return future


def detached(loop: asyncio.AbstractEventLoop, callback: Callable[..., Any]
             ) -> Callable[..., None]:
    """A plain function for a client thread: starts ``callback`` (a coroutine function or a
    plain one) on ``loop`` and returns at once. What it raises goes to the loop's exception
    handler."""

    def report(exc: BaseException) -> None:
        loop.call_exception_handler({"message": f"kafka_fast callback {callback!r} raised",
                                     "exception": exc})

    def finished(task: asyncio.Future) -> None:
        if not task.cancelled() and task.exception() is not None:
            report(task.exception())  # type: ignore[arg-type]

    def start(args: tuple) -> None:
        try:
            result = callback(*args)
        except Exception as exc:
            report(exc)
            return
        if inspect.isawaitable(result):
            asyncio.ensure_future(result).add_done_callback(finished)

    def run(*args: Any) -> None:
        try:
            loop.call_soon_threadsafe(start, args)
        except RuntimeError:  # the loop is closed: nobody is left to tell
            log.debug("event loop closed: %r not called", callback)

    return run


def wrap_config(loop: asyncio.AbstractEventLoop, conf: dict[str, Any],
                owner: object, wait: bool = True) -> dict[str, Any]:
    """A copy of ``conf`` whose callbacks run on ``loop``: the calling thread waits for each
    (serving ``owner``'s re-entrant calls), or with ``wait=False`` they are ``detached``."""
    if not isinstance(conf, dict):
        raise TypeError(f"configuration must be a dict, not {type(conf).__name__}")
    out = dict(conf)
    for name in CONFIG_CALLBACKS:
        if out.get(name) is not None:
            out[name] = on_loop(loop, out[name], owner) if wait else detached(loop, out[name])
    return out
