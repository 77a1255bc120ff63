"""Share groups (KIP-932): ``ShareConsumer`` and ``DeserializingShareConsumer``.

The modules: ``membership`` (ShareGroupHeartbeat), ``session`` (a broker's share session and
its requests), ``acks`` (in-flight and pending acknowledgements), ``records`` (acquired records
as messages), ``model`` (Messages, AcknowledgeType, ShareMessage, the state errors) and
``consumer`` (the API).
"""

from .consumer import ShareConsumer
from .deserializing import DeserializingShareConsumer
from .model import (
    AcknowledgeType,
    ConcurrentModificationException,
    IllegalStateException,
    Messages,
    ShareMessage,
)

__all__ = ["AcknowledgeType", "ConcurrentModificationException", "DeserializingShareConsumer",
           "IllegalStateException", "Messages", "ShareConsumer", "ShareMessage"]
