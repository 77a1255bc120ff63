"""Client statistics: counters kept per request, batch and fetch, the librdkafka-shaped
``stats_cb`` JSON and the flat ``metrics()`` dict (see docs/statistics.md)."""

from .counters import BatchRecorder, BrokerCounters, ClientCounters, FetchRecorder, Window
from .report import (
    BrokerView,
    ClientStats,
    ConsumerPartition,
    GroupView,
    ProducerQueues,
    Sources,
)

__all__ = ["BatchRecorder", "BrokerCounters", "BrokerView", "ClientCounters", "ClientStats",
           "ConsumerPartition", "FetchRecorder", "GroupView", "ProducerQueues", "Sources",
           "Window"]
