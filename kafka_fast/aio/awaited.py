"""Clients created with ``await Client(...)``, as confluent-kafka's asyncio serializing clients
are: they make their serializers while being created, and builders of asyncio serializers
are themselves awaited."""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any, TypeVar

_T = TypeVar("_T", bound="AwaitedInit")


class AwaitedInit:
    """Base class of clients whose ``__init__`` is a coroutine function: calling the class
    returns a coroutine that runs it and resolves to the instance, so
    ``client = await Client(conf)``."""

    if TYPE_CHECKING:
        # What type checkers see: awaiting what the call returns gives the instance.
        def __await__(self: _T) -> Generator[Any, None, _T]: ...
    else:
        def __new__(cls, *args, **kwargs):
            return _initialized(super().__new__(cls), args, kwargs)


async def _initialized(obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    await obj.__init__(*args, **kwargs)
    return obj
