"""Handing fetched records to the application (its thread only).

``Delivery`` reads the queue of fetched chunks in ``FetchState`` through a cursor (chunk,
segment, record) and hands records out as ``Message`` objects built a few hundred at a time in
one compiled loop (``poll``/``consume``) or as column segments (``consume_batch``). It moves
each partition's application position (and, with ``enable.auto.offset.store``, the stored
offset) to the offset after the last record handed out, exactly as if every record had been
polled one by one. A ``start`` chunk sets the position the I/O thread found for a partition
whose position was not known. Every field it writes (its own and the ``AppPosition``s) is
written on the application thread only.
"""

from __future__ import annotations

from typing import Any

from .._impl import load
from ..message import Message
from .batch_view import RecordBatchView, eof_error
from .fetch_decode import Segment
from .fetch_state import Chunk, FetchState
from .ownership import armed, owned
from .state import AppPosition

_columns, _ = load("_columns", "columns")
append_messages = _columns.append_messages

#: (application position, its gen, position after the records, leader epoch of the last)
Progress = tuple[AppPosition, int, int, int]


@owned
class Delivery:
    """The delivery cursor over fetched chunks, and the messages built ahead for ``poll``."""

    def __init__(self, state: FetchState, auto_store: bool, per_chunk: int,
                 wake_fetcher: Any) -> None:
        self.state = state
        self.auto_store = auto_store
        self.per_chunk = per_chunk
        #: called when the queue runs low, so the fetcher sends the next Fetch
        self.wake_fetcher = wake_fetcher
        self.refill_below = 0
        # poll(): messages built from the current chunk, handed out by index.
        self.msgs: list[Message] = []
        self.idx = 0
        self.nmsgs = 0
        self.msgs_state: AppPosition | None = None
        self.msgs_gen = -1
        self.msgs_end = -1
        # the chunk being read: segment index and record index inside it
        self.cur: Chunk | None = None
        self.cur_seg = 0
        self.cur_rec = 0
        self.topic_numbers: dict[str, int] = {}
        state.on_drop = self.forget
        armed(self)

    # -- what was handed out ---------------------------------------------------------------------
    def forget(self, app: AppPosition) -> None:
        """Drop what was read or built from ``app``'s buffered records (state lock held)."""
        if self.cur is not None and self.cur.app is app:
            self.cur = None
        if self.msgs_state is app:
            self.clear_messages()

    def clear_messages(self) -> None:
        self.msgs = []
        self.idx = self.nmsgs = 0
        self.msgs_state = None

    def settle(self) -> None:
        """Record the position reached by the poll() messages handed out so far."""
        ps = self.msgs_state
        if ps is None or self.idx == 0:
            return
        if ps.gen != self.msgs_gen:
            return
        last = self.msgs[self.idx - 1]
        if self.idx >= self.nmsgs:
            pos = self.msgs_end
        else:
            offset = last.offset()
            if last.error() is not None or offset is None:
                return
            pos = offset + 1
        self.move_position(ps, pos, last.leader_epoch() if last.error() is None else None)

    def after_settle(self) -> None:
        if self.idx >= self.nmsgs:
            self.msgs_state = None

    def advance(self, info: Progress) -> None:
        """Apply the position reached by records handed out at once (consume paths)."""
        ps, gen, end, epoch = info
        if end < 0 or ps.gen != gen:
            return
        self.move_position(ps, end, epoch)

    def move_position(self, ps: AppPosition, position: int, epoch: int | None) -> None:
        """The application has received every record before ``position``; the last of them
        has leader epoch ``epoch`` (None or -1 when unknown)."""
        if position > ps.position or ps.position < 0:
            ps.position = position
            if epoch is not None and epoch >= 0:
                ps.leader_epoch = epoch
            if self.auto_store:
                ps.stored = position
                ps.stored_epoch = ps.leader_epoch

    # -- reading chunks ----------------------------------------------------------------------------
    def topic_no(self, topic: str) -> int:
        n = self.topic_numbers.get(topic)
        if n is None:
            n = self.topic_numbers[topic] = len(self.topic_numbers)
        return n

    def _next_chunk(self) -> Chunk | None:
        """The chunk to read from next (state lock held)."""
        cur = self.cur
        if cur is not None:
            return cur
        state = self.state
        while True:
            ch = state.pop_ready()
            if ch is None:
                return None
            if not ch.start:
                break
            # The I/O thread found the position (committed offset or auto.offset.reset).
            ch.app.started(ch.next_offset, ch.epoch, ch.committed)
        self.cur = ch
        self.cur_seg = 0
        self.cur_rec = ch.segments[0].start if ch.segments else 0
        if not state.ready or state.queued_records < self.refill_below:
            self.wake_fetcher()
        return ch

    def take(self, limit: int, out: list | None, pieces: list | None) -> tuple[int, Any]:
        """Take up to ``limit`` records from the current chunk (one partition).

        Appends Messages to ``out`` or ``(topic no, partition, Segment)`` to ``pieces``.
        Returns ``(count, Progress)`` or ``(0, None)`` with no data.
        """
        with self.state.lock:
            ch = self._next_chunk()
            if ch is None:
                return 0, None
        ps = ch.app
        if ch.eof or (ch.error is not None and not ch.segments):
            self.cur = None
            err = ch.error or eof_error(ps.topic, ps.partition, ch.next_offset)
            end = -1 if ch.eof else ch.next_offset
            if out is None:
                if ch.error is not None:
                    self.state.post_error(ch.error)
                return 0, (ps, ch.gen, end, -1)
            out.append(Message(ps.topic, ps.partition, ch.next_offset, error=err))
            return 1, (ps, ch.gen, end, -1)
        taken = 0
        segs = ch.segments
        end = ch.next_offset
        epoch = -1
        while taken < limit and self.cur_seg < len(segs):
            seg = segs[self.cur_seg]
            start = self.cur_rec
            n = min(limit - taken, seg.stop - start)
            if out is not None:
                append_messages(out, ps.topic, ps.partition, seg.cols, start, start + n,
                                seg.timestamp_type, seg.leader_epoch)
            else:
                assert pieces is not None
                pieces.append((self.topic_no(ps.topic), ps.partition,
                               Segment(seg.cols, start, start + n, seg.timestamp_type,
                                       seg.leader_epoch)))
            taken += n
            if n:
                epoch = seg.leader_epoch
                # The application has these records, not yet those of later segments.
                end = int(seg.cols.offsets[start + n - 1]) + 1
            if start + n >= seg.stop:
                self.cur_seg += 1
                if self.cur_seg < len(segs):
                    self.cur_rec = segs[self.cur_seg].start
            else:
                self.cur_rec = start + n
                break
        if self.cur_seg >= len(segs):
            self.cur = None
            end = ch.next_offset
            if ch.error is not None:
                if out is not None:
                    out.append(Message(ps.topic, ps.partition, end, error=ch.error))
                else:
                    self.state.post_error(ch.error)
        return taken, (ps, ch.gen, end, epoch)

    def next_message(self) -> Message | None:
        """Build the next run of messages for poll() and hand out the first (None if no
        records are fetched)."""
        while True:
            out: list[Message] = []
            count, info = self.take(self.per_chunk, out, None)
            if info is None:
                return None
            if count:
                self.msgs = out
                self.nmsgs = len(out)
                self.idx = 1
                self.msgs_state, self.msgs_gen, self.msgs_end, _ = info
                if out[0].error() is not None:
                    self.msgs_end = -1
                return out[0]
            self.advance(info)

    def built_ahead(self, limit: int) -> list[Message]:
        """Up to ``limit`` messages already built for poll(), handed out now."""
        if self.idx >= self.nmsgs:
            return []
        rest = self.msgs[self.idx:self.idx + limit]
        self.idx += len(rest)
        self.settle()
        return rest

    def view(self, pieces: list, with_headers: bool) -> RecordBatchView:
        """The ``RecordBatchView`` over ``pieces`` taken by ``take``."""
        topics = sorted(self.topic_numbers, key=self.topic_numbers.__getitem__)
        used = sorted({t for t, _, _ in pieces})
        remap = {old: new for new, old in enumerate(used)}
        pieces = [(remap[t], p, s) for t, p, s in pieces]
        return RecordBatchView(pieces, [topics[i] for i in used], with_headers=with_headers)


def view_from_messages(msgs: list[Message], headers: bool) -> RecordBatchView:
    """A ``RecordBatchView`` over messages of one partition already built for poll()."""
    import numpy as np

    from ..records import Columns

    def packed(fields: list) -> tuple:
        nulls = np.array([f is None for f in fields], dtype=bool)
        sizes = np.array([0 if f is None else len(f) for f in fields], dtype=np.int64)
        offs = np.zeros(len(fields) + 1, np.int64)
        np.cumsum(sizes, out=offs[1:])
        data = np.frombuffer(b"".join(f for f in fields if f is not None), np.uint8)
        return (data, offs), nulls

    keys, kn = packed([msg.key() for msg in msgs])
    values, vn = packed([msg.value() for msg in msgs])
    cols = Columns(np.array([msg.offset() for msg in msgs], np.int64),
                   np.array([msg.timestamp()[1] for msg in msgs], np.int64), keys, values, kn,
                   vn, [msg.headers() for msg in msgs])
    first = msgs[0]
    topic, partition, epoch = first.topic(), first.partition(), first.leader_epoch()
    assert topic is not None and partition is not None
    seg = Segment(cols, 0, len(msgs), first.timestamp()[0], epoch if epoch is not None else -1)
    return RecordBatchView([(0, partition, seg)], [topic], headers)
