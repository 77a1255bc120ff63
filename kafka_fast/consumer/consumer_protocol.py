"""The "consumer" embedded protocol of JoinGroup/SyncGroup: subscription and assignment bytes.

Both are a big-endian int16 version followed by the ConsumerProtocolSubscription /
ConsumerProtocolAssignment structure of that version. Newer versions only append fields, so
bytes of a version above the highest known one are read with the highest known one.
"""

from __future__ import annotations

import struct

from ..errors import ProtocolError
from ..protocol import messages
from .assignors import Assignment, Subscription

_VERSION = struct.Struct(">h")


def _split(data) -> tuple[int, memoryview]:
    view = memoryview(data)
    if len(view) < 2:
        raise ProtocolError(f"consumer protocol data of {len(view)} bytes has no version")
    (version,) = _VERSION.unpack_from(view)
    if version < 0:
        raise ProtocolError(f"consumer protocol data has a negative version {version}")
    return version, view[2:]


def encode_subscription(sub: Subscription, version: int = 3) -> bytes:
    """Subscription metadata for JoinGroup."""
    cls = messages.ConsumerProtocolSubscription
    version = min(version, cls.MAX_VERSION)
    msg = cls(
        topics=list(sub.topics),
        user_data=sub.user_data,
        owned_partitions=[
            cls.TopicPartition(topic=t, partitions=sorted(ps))
            for t, ps in sorted(sub.owned.items())
            if ps
        ],
        generation_id=sub.generation,
        rack_id=sub.rack,
    )
    return _VERSION.pack(version) + bytes(msg.encode(version))


def decode_subscription(data, group_instance_id: str | None = None) -> Subscription:
    """Parse a member's JoinGroup metadata."""
    version, body = _split(data)
    cls = messages.ConsumerProtocolSubscription
    msg = cls.decode(body, min(version, cls.MAX_VERSION))
    owned: Assignment = {}
    for tp in msg.owned_partitions or ():
        owned.setdefault(tp.topic, []).extend(tp.partitions)
    return Subscription(
        topics=list(msg.topics),
        owned=owned,
        generation=msg.generation_id if version >= 2 else -1,
        user_data=None if msg.user_data is None else bytes(msg.user_data),
        rack=msg.rack_id if version >= 3 else None,
        group_instance_id=group_instance_id,
    )


def encode_assignment(assignment: Assignment, user_data: bytes | None = None,
                      version: int = 0) -> bytes:
    """Assignment bytes for SyncGroup."""
    cls = messages.ConsumerProtocolAssignment
    version = min(version, cls.MAX_VERSION)
    msg = cls(
        assigned_partitions=[
            cls.TopicPartition(topic=t, partitions=sorted(ps))
            for t, ps in sorted(assignment.items())
            if ps
        ],
        user_data=user_data,
    )
    return _VERSION.pack(version) + bytes(msg.encode(version))


def decode_assignment(data) -> Assignment:
    """Parse the assignment SyncGroup returned; empty bytes mean no partitions."""
    if data is None or len(data) == 0:
        return {}
    version, body = _split(data)
    cls = messages.ConsumerProtocolAssignment
    msg = cls.decode(body, min(version, cls.MAX_VERSION))
    out: Assignment = {}
    for tp in msg.assigned_partitions:
        out.setdefault(tp.topic, []).extend(tp.partitions)
    return out
