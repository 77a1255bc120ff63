"""Lanes: which of a client's connections to one broker a request travels on.

A broker answers the requests of one connection in order, so a request written behind a
long-polling Fetch waits until that Fetch is answered (up to ``fetch.wait.max.ms``). Each
broker therefore gets one connection per lane in use, opened on first use:

- ``DEFAULT``: metadata, offset look-ups (ListOffsets), produce, admin and the rest; nothing
  on it is held open by the broker, so a user waiting on it is answered at once;
- ``COORDINATOR``: group and transaction coordinator traffic (JoinGroup, SyncGroup, Heartbeat,
  OffsetCommit, OffsetFetch, ConsumerGroupHeartbeat, LeaveGroup, AddPartitionsToTxn, EndTxn,
  TxnOffsetCommit, ...), as the Java client's separate coordinator connection;
- ``FETCH``: the consumer's Fetch requests, which the broker may hold for their wait time;
- ``PRODUCE_2`` to ``PRODUCE_4``: more Produce connections (``produce.connections.per.broker``).
  A broker reads the next request of a connection only once it answered the one before, so
  one connection's Produce requests are written one after the other; over k connections the
  broker writes k requests at once. Partition p always travels on connection ``p % k`` (the
  first being ``DEFAULT``): the order of one partition's batches is kept.
"""

from __future__ import annotations

import enum


class Lane(enum.IntEnum):
    DEFAULT = 0
    COORDINATOR = 1
    FETCH = 2
    PRODUCE_2 = 3
    PRODUCE_3 = 4
    PRODUCE_4 = 5


#: The connections a producer spreads its partitions over, in order.
PRODUCE_LANES = (Lane.DEFAULT, Lane.PRODUCE_2, Lane.PRODUCE_3, Lane.PRODUCE_4)
