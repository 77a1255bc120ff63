"""Lanes: which of a client's connections to one broker a request travels on.

A broker answers the requests of one connection in order, so a request written behind a
long-polling Fetch waits until that Fetch is answered (up to ``fetch.wait.max.ms``). Each
broker therefore gets up to three connections, opened on first use:

- ``DEFAULT``: metadata, offset look-ups (ListOffsets), produce, admin and the rest; nothing
  on it is held open by the broker, so a user waiting on it is answered at once;
- ``COORDINATOR``: group and transaction coordinator traffic (JoinGroup, SyncGroup, Heartbeat,
  OffsetCommit, OffsetFetch, ConsumerGroupHeartbeat, LeaveGroup, AddPartitionsToTxn, EndTxn,
  TxnOffsetCommit, ...), as the Java client's separate coordinator connection;
- ``FETCH``: the consumer's Fetch requests, which the broker may hold for their wait time.
"""

from __future__ import annotations

import enum


class Lane(enum.IntEnum):
    DEFAULT = 0
    COORDINATOR = 1
    FETCH = 2
