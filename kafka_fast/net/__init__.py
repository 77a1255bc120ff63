"""Network core: the I/O thread, broker connections and the KafkaClient built on them."""

from .client import KafkaClient
from .events import ClientEvent, EventQueue, ThrottleEvent
from .framing import BufferPool

__all__ = ["BufferPool", "ClientEvent", "EventQueue", "KafkaClient", "ThrottleEvent"]
