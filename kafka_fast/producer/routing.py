"""Where ``produce()`` puts a record: the routing state and ``Producer.produce``'s fast path.

``ProduceRouter.produce`` (compiled in ``_produce.pyx``; signature and docstring in
``_produce.pyi``) is the method ``Producer`` inherits: a record whose topic and partitions are
known goes straight into its partition's open batch, reading the routing state (``_routing.pyx``:
the accumulator's counters, per-topic and per-partition routes, a C-level lock) that
:mod:`kafka_fast.producer.accumulator` subclasses. Without the compiled modules both come from
their pure-Python twins (``kafka_fast._pure.produce``, ``kafka_fast._pure.routing``), where
every record takes ``Producer._produce``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from kafka_fast._impl import load

_produce, NATIVE = load("_produce", "produce", package="kafka_fast.producer")
# the fast path reads the compiled state's C fields: both compiled, or both twins
_routing = importlib.import_module(
    "kafka_fast.producer._routing" if NATIVE else "kafka_fast._pure.routing")

# type checkers see the compiled modules' stubs; the twins have the same classes
if TYPE_CHECKING:
    from kafka_fast.producer._produce import ProduceRouter
    from kafka_fast.producer._routing import (
        PartitionRoute,
        RouteLock,
        RouterState,
        TopicRoute,
    )
else:
    ProduceRouter = _produce.ProduceRouter
    RouteLock = _routing.RouteLock
    PartitionRoute = _routing.PartitionRoute
    TopicRoute = _routing.TopicRoute
    RouterState = _routing.RouterState

__all__ = ["NATIVE", "PartitionRoute", "ProduceRouter", "RouteLock", "RouterState",
           "TopicRoute"]
