"""The record batch wire format shared by both record-engine implementations: batch header
layout (magic 2), legacy message limits (magic 0/1), attribute bits and control records."""

from __future__ import annotations

import struct

from kafka_fast.errors import CorruptRecordError

# RecordBatch v2 header: baseOffset, batchLength, partitionLeaderEpoch, magic, crc, attributes,
# lastOffsetDelta, firstTimestamp, maxTimestamp, producerId, producerEpoch, baseSequence, count.
HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61
CRC_START = 21  # the CRC covers attributes .. end of batch
LOG_OVERHEAD = 12  # offset + length in front of every batch / legacy message
MIN_V2_LENGTH = HEADER_SIZE - LOG_OVERHEAD  # 49
MIN_LEGACY_LENGTH = 14  # crc, magic, attributes, key length, value length (magic 0)
MIN_RECORD_SIZE = 7  # length, attributes, ts delta, offset delta, key len, value len, headers

ATTR_COMPRESSION_MASK = 0x07
ATTR_LOG_APPEND_TIME = 0x08
ATTR_TRANSACTIONAL = 0x10
ATTR_CONTROL = 0x20

CONTROL_ABORT = 0
CONTROL_COMMIT = 1


def decode_control_key(key: bytes) -> tuple[int, int]:
    """(version, type) of a control record key; type 0 is ABORT, 1 COMMIT."""
    if key is None or len(key) < 4:
        raise CorruptRecordError("control record key shorter than 4 bytes", -1)
    version, ctype = struct.unpack_from(">hh", key, 0)
    return version, ctype
