"""``produce_batch``: whole columns partitioned, grouped and encoded in compiled code.

Columns are lists of bytes/str/None, 2-D uint8 arrays (one row per record) or packed
``(data, offsets[, nulls])`` tuples (see ``kafka_fast.records``). The keys are partitioned in
one native call, records are grouped by partition with a stable counting sort, each
partition's rows are gathered and cut into batches of at most ``batch.size`` bytes, and each
batch is encoded by ``encode_batch`` in one call. Arrays and packed columns create no Python
object per record.

The queue bounds act as back-pressure here: when the producer holds
``queue.buffering.max.messages`` records, ``produce_batch`` serves delivery reports and waits
for room (up to ``delivery.timeout.ms``) instead of raising BufferError half way.

Encoding runs far faster than a broker acknowledges, so ``produce_batch`` also keeps at most
:data:`AHEAD_BYTES` (or four batches, if more) of encoded batches waiting for acknowledgement
and waits for acknowledgements before encoding more (for ``delivery.timeout.ms`` per call at
most: a broker that stopped answering then gets the rest queued, and the delivery reports
tell), so the producer's memory stays bounded by the window. Batches are encoded into
buffers of the producer's own pool (:class:`kafka_fast.net.framing.BufferPool`), which takes
each one back once its batch is acknowledged and no request holds it any more: the next batches
reuse memory already faulted in instead of touching fresh pages (a page fault per 4 KB cost a
third of the CPU of a large call), and the sender stamps the producer id and sequence into that
buffer in place instead of copying the batch. The per-record partition and order arrays of a
call are the producer's too (:class:`kafka_fast.producer.scratch.ScratchArrays`), and
fixed-width columns get one size for every record instead of an array of sizes.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import KafkaError, KafkaException
from ..net.framing import BufferPool
from ..records import encode_batch
from .accumulator import now_ms
from .arguments import as_bytes, as_headers
from .batch import ColumnEntries, ProducerBatch
from .contract import as_column, check_partition, record_count, timestamp_column
from .partitioner import (
    chunk_ends,
    first_not_bytes,
    gather_column,
    group_by_partition,
    is_packed,
    partition_column,
    row_sizes,
)
from .scratch import ScratchArrays

if TYPE_CHECKING:
    from ..config.table import Config
    from ..net import KafkaClient
    from .accumulator import Accumulator, TopicState
    from .delivery import DeliveryQueue

#: Bytes a record adds besides its key, value and headers (length, attributes, deltas...).
RECORD_OVERHEAD = 21
#: The RecordBatch v2 header.
BATCH_OVERHEAD = 61


def _headers(headers: Any, n: int) -> tuple[Any, bool]:
    """(headers for encode_batch, per_record?)."""
    if headers is None or (isinstance(headers, list) and not headers):
        return None, False  # [] as produce() takes it: no headers
    if isinstance(headers, dict):
        return as_headers(headers), False
    if not isinstance(headers, (list, tuple)):
        raise TypeError("headers must be one header list/dict for every record or a list of "
                        f"per-record header lists, not {type(headers).__name__}")
    if all(isinstance(h, tuple) for h in headers) and headers:
        return as_headers(list(headers)), False
    if len(headers) != n:
        raise ValueError(f"headers has {len(headers)} entries for {n} records")
    return [as_headers(h, f"headers[{i}]") for i, h in enumerate(headers)], True


_LOCAL = threading.local()
#: Batches being encoded at once by the worker threads of one produce_batch call.
ENCODE_WINDOW = 4
ENCODE_THREADS = 2
#: Bytes of queued batches after which the I/O thread is woken (and, encoding on the calling
#: thread, given the interpreter): small batches then share one Produce request per broker.
WAKE_BYTES = 256 * 1024
#: Encoded bytes of ``produce_batch`` batches that may wait for acknowledgement before it
#: waits (a soft bound: one call waits ``delivery.timeout.ms`` in all at most).
AHEAD_BYTES = 16 * 1024 * 1024


#: Encoded batches the producer's buffer pool follows until they are released.
POOL_BUFFERS = 64
#: Batches smaller than this are encoded into bytes of their own (no page faults to save).
POOL_MIN_BYTES = 64 * 1024


def _scratch() -> dict:
    """This thread's reusable gather buffers."""
    buf = getattr(_LOCAL, "scratch", None)
    if buf is None:
        buf = _LOCAL.scratch = {}
    return buf


def _gather(column: Any, order: np.ndarray, a: int, b: int, scratch: dict | None,
            name: str) -> Any:
    """Rows ``order[a:b]`` of a column (2-D arrays into a reused scratch array)."""
    if scratch is None or not isinstance(column, np.ndarray):
        return gather_column(column, order, a, b)
    buf = scratch.get(name)
    if buf is None or len(buf) < b - a:
        buf = scratch[name] = np.empty((max(b - a, 1024), column.shape[1]), np.uint8)
    return gather_column(column, order, a, b, buf[:b - a])


def _slice(column: Any, s: int, e: int) -> Any:
    if column is None:
        return None
    if is_packed(column):
        nulls = column[2] if len(column) == 3 else None
        return (column[0], column[1][s:e + 1], None if nulls is None else nulls[s:e])
    return column[s:e]


def _header_sizes(headers: list, n: int) -> np.ndarray:
    return np.asarray([
        sum(len(k.encode()) + (0 if v is None else len(v)) + 4 for k, v in (h or ()))
        for h in headers], dtype=np.int64)


def _fixed_size(values: Any, keys: Any, hdrs: Any, per_record_headers: bool) -> int:
    """The bytes every record's key, value and headers take when they are the same for all
    records (2-D arrays or no keys, headers shared by all), else -1."""
    if per_record_headers:
        return -1
    size = 0
    for column in (values, keys):
        if column is None:
            continue
        if not isinstance(column, np.ndarray) or column.ndim != 2:
            return -1
        size += column.shape[1]
    if hdrs is not None:
        size += int(_header_sizes([hdrs], 1)[0])
    return size


def _chunk_ends(sizes: np.ndarray | int, rows: Any, count: int, limit: int,
                max_count: int) -> np.ndarray:
    """``chunk_ends`` of ``count`` rows: ``sizes`` is their byte sizes (an int64 array, of
    which ``rows`` picks theirs, a slice or indices) or one size every record has (an int:
    then the chunks are counted, no array of sizes is made)."""
    if isinstance(sizes, int):
        step = max(1, min(max_count, limit // sizes))
        return np.minimum(np.arange(step, count + step, step, dtype=np.int64), count)
    return chunk_ends(sizes[rows], limit, max_count)


class BatchProducer:
    """``produce_batch`` for one producer, with the encoder threads it owns.

    It queues sealed batches into the producer's accumulator and reaches the producer only
    through what it is given: the accumulator, the client, the configuration, ``learn_topic``
    (partitions from cached metadata, lock held), ``serve`` (serve delivery reports) and the
    report queue to wait on.
    """

    def __init__(self, acc: Accumulator, client: KafkaClient, config: Config,
                 learn_topic: Callable[[TopicState], bool], serve: Callable[[], int],
                 reports: DeliveryQueue) -> None:
        self.acc = acc
        self.client = client
        self.config = config
        self.learn_topic = learn_topic
        self.serve = serve
        self.reports = reports
        self.encoder: ThreadPoolExecutor | None = None
        #: Batches queued here, oldest first, with their encoded sizes (see ``unacked``);
        #: weak references, so a served batch is not kept alive by this list.
        self.pending: deque[tuple[weakref.ref[ProducerBatch], int]] = deque()
        self.pending_bytes = 0
        self.lock = threading.Lock()
        #: Memory of encoded batches, reused once a batch is acknowledged and released (up
        #: to the window of unacknowledged batches waits unused).
        window = max(AHEAD_BYTES, 4 * acc.batch_size)
        self.buffers = BufferPool(max_buffers=POOL_BUFFERS, min_size=POOL_MIN_BYTES,
                                  max_free_bytes=window)
        #: The per-record partition and order arrays of a call, reused by the next.
        self.scratch = ScratchArrays(window)

    def encoder_pool(self) -> ThreadPoolExecutor:
        """The worker threads that encode array columns (started on first use; one pool
        however many application threads call ``produce_batch`` at once)."""
        encoder = self.encoder
        if encoder is None:
            with self.lock:
                if self.encoder is None:
                    self.encoder = ThreadPoolExecutor(ENCODE_THREADS,
                                                      thread_name_prefix="kafka_fast-encode")
                encoder = self.encoder
        return encoder

    def produce_columns(self, topic: str, values: Any, keys: Any, partition: int,
                        timestamps: Any, headers: Any, cb: Any) -> int:
        """The columnar ``produce_batch``."""
        # The record contract's order (kafka_fast.producer.contract): the columns' forms,
        # then timestamps, headers, keys, values; a partition the topic lacks is refused last.
        if values is None:
            raise TypeError("values must be a list, a 2-D uint8 array or a packed "
                            "(data, offsets) column, not None")
        n = record_count(values, "values")
        if keys is not None and record_count(keys, "keys") != n:
            raise ValueError(f"keys has {record_count(keys, 'keys')} entries for {n} values")
        if n == 0:
            return 0
        ts = timestamp_column(timestamps, n, now_ms())
        if ts is None and cb is not None:
            ts = np.full(n, now_ms(), dtype=np.int64)
        hdrs, per_record_headers = _headers(headers, n)
        keys = None if keys is None else as_column(keys, "keys", as_bytes, first_not_bytes)
        values = as_column(values, "values", as_bytes, first_not_bytes)
        acc = self.acc
        t = self.topic_with_metadata(topic)
        nparts = t.num_partitions
        check_partition(topic, partition, nparts)

        # Fixed-width columns: one size for every record, no per-record array of sizes.
        fixed = _fixed_size(values, keys, hdrs, per_record_headers)
        sizes: np.ndarray | int
        if fixed >= 0:
            sizes = biggest = fixed
            same_size = True
        else:
            each = row_sizes(values)
            if keys is not None:
                each = each + row_sizes(keys)
            if hdrs is not None:
                each = each + (_header_sizes(hdrs, n) if per_record_headers
                               else _header_sizes([hdrs], 1)[0])
            biggest = int(each.max())
            same_size = biggest == int(each.min())
            sizes = each
        if biggest > acc.max_message:
            at = 0 if isinstance(sizes, int) else int(np.argmax(sizes))
            raise KafkaException(KafkaError.of(
                KafkaError.MSG_SIZE_TOO_LARGE,
                f"Broker: Message size too large: record {at} has {biggest} bytes, "
                f"message.max.bytes={acc.max_message}"))
        sizes = sizes + RECORD_OVERHEAD

        # The partition and order arrays come from the producer's scratch arrays and go back
        # when the call is done (unless reports keep the order, or an error left encoder
        # threads reading it).
        scratch = self.scratch
        parts_buf = order_buf = None
        if partition >= 0:
            parts = None
        else:
            parts_buf = scratch.take(n, np.int32)
            parts = parts_buf[:n]
            if keys is not None:
                partition_column(keys, nparts, acc.algorithm, out=parts)
            else:
                parts.fill(-1)
            loose = np.flatnonzero(parts < 0)
            if len(loose):
                _assign_sticky(acc, t, parts, loose, sizes)

        limit = max(1, acc.batch_size - BATCH_OVERHEAD)
        codec = acc.compression
        level = acc.compression_level
        created = time.monotonic()
        # Rows are gathered batch by batch into scratch arrays reused for every batch (unless a
        # callback keeps them): fresh large buffers would page-fault on every use.
        keep = cb is not None
        if parts is None or bool(np.all(parts == parts[0])):
            # One partition: the columns are cut into batches as they are, nothing is copied.
            target = partition if parts is None else int(parts[0])
            order = None
            groups = [(target, 0, n)]
        else:
            if not keep:  # reports keep their rows of the order: then it is the call's own
                order_buf = scratch.take(n, np.int64)
            order, starts = group_by_partition(
                parts, nparts, out=None if order_buf is None else order_buf[:n])
            groups = [(q, int(starts[q]), int(starts[q + 1])) for q in range(nparts)
                      if starts[q + 1] > starts[q]]
        # Array and packed columns are not gathered at all: the encoder picks each batch's
        # rows (lists, and per-record headers, would be set up whole for every batch).
        pick = (not per_record_headers and not isinstance(values, list)
                and not isinstance(keys, list))

        def chunks():
            for q, lo, hi in groups:
                idx = None if order is None else order[lo:hi]
                # equal sizes (fixed-width columns): any slice of the length is the same
                ends = _chunk_ends(sizes, slice(lo, hi) if idx is None or same_size else idx,
                                   hi - lo, limit, acc.batch_records)
                start = lo
                for end in ends.tolist():
                    yield q, start, lo + end
                    start = lo + end

        def encode(q: int, a: int, b: int) -> tuple:
            if order is None:
                cv, ck = _slice(values, a, b), _slice(keys, a, b)
                ct = None if ts is None else ts[a:b]
                ch = hdrs[a:b] if per_record_headers else hdrs
            elif pick:
                # The encoder reads the partition's rows straight from the columns; reports
                # (if any) pick the same rows when they are built.
                rows = order[a:b]
                payload = encode_batch(values, keys, timestamps=ts, headers=hdrs,
                                       compression=codec, compression_level=level, rows=rows,
                                       into=into)
                count = b - a
                return q, count, payload, ColumnEntries(
                    cb, values, keys, ts, None if hdrs is None else [hdrs] * count, count,
                    rows) if keep else None
            else:
                scratch = None if keep else _scratch()
                cv = _gather(values, order, a, b, scratch, "v")
                ck = _gather(keys, order, a, b, scratch, "k")
                rows = order[a:b]
                ct = None if ts is None else ts[rows]
                ch = [hdrs[i] for i in rows.tolist()] if per_record_headers else hdrs
            payload = encode_batch(cv, ck, timestamps=ct, headers=ch, compression=codec,
                                   compression_level=level, into=into)
            count = b - a
            entries = ColumnEntries(cb, cv, ck, ct, ch if per_record_headers else
                                    (None if ch is None else [ch] * count), count) \
                if keep else None
            return q, count, payload, entries

        unsent = [0]
        queued = [0]
        into = self.buffers.acquire

        def queue(q: int, count: int, payload: Any, entries: Any) -> bool:
            """Queue one batch; True when enough bytes wait for the I/O thread to wake it (one
            Produce request then carries many small batches instead of one each)."""
            batch = ProducerBatch(t.parts[q], count, len(payload), created, entries,
                                  payload=payload)
            self.wait_for_room(count, len(payload))
            self.wait_for_acks(ahead, give_up)
            with acc.lock:
                acc.add_sealed(t.parts[q], batch)
                acc.count += count
            queued[0] += count
            with self.lock:
                self.pending.append((weakref.ref(batch), batch.size))
                self.pending_bytes += batch.size
            unsent[0] += len(payload)
            if unsent[0] < WAKE_BYTES:
                return False
            unsent[0] = 0
            self.client.wakeup()
            return True

        ahead = max(AHEAD_BYTES, 4 * acc.batch_size)
        give_up: list[float] = []
        # Arrays and packed columns are gathered and encoded without the interpreter lock, so
        # two worker threads encode batches side by side; batches are queued in input order.
        pool = self.encoder_pool() if (
            not isinstance(values, list) and not isinstance(keys, list)
            and not per_record_headers and n > 2 * acc.batch_records) else None
        try:
            if pool is None:
                for spec in chunks():
                    if queue(*encode(*spec)):
                        time.sleep(0)  # let the I/O thread ship them while the next is encoded
            else:
                window: deque = deque()
                for spec in chunks():
                    window.append(pool.submit(encode, *spec))
                    if len(window) >= ENCODE_WINDOW:
                        queue(*window.popleft().result())
                while window:
                    queue(*window.popleft().result())
        except BaseException as exc:
            if parts_buf is not None:
                scratch.give(parts_buf)  # only this thread read it
            if queued[0]:
                # Batches are queued in ``order``: the queued rows are its first ones.
                done = np.arange(queued[0]) if order is None else order[:queued[0]].copy()
                self.client.wakeup()
                partly_queued(exc, done, n)
            raise
        for buf in (parts_buf, order_buf):
            if buf is not None:
                scratch.give(buf)
        self.client.wakeup()
        return queued[0]

    def topic_with_metadata(self, topic: str) -> Any:
        """``topic``'s state once its partitions are known, asking the cluster for up to
        ``request.timeout.ms`` (records produce() left waiting for them are placed first).

        Raises KafkaException: the topic's error when the cluster reports one that retrying
        cannot clear, else ``_TIMED_OUT`` naming the topic and what was missing.
        """
        acc = self.acc
        with acc.lock:
            t = acc.topic(topic)
            if t.num_partitions or self.learn_topic(t):
                return t
        config = self.config
        timeout = config["request.timeout.ms"] / 1000.0
        deadline = time.monotonic() + timeout
        delay = config["retry.backoff.ms"] / 1000.0
        last: KafkaError | None = None
        answered = False
        while (remaining := deadline - time.monotonic()) > 0:
            try:
                view = self.client.request_metadata([topic]).result(remaining)
            except FutureTimeout:
                break
            except KafkaException as exc:
                last = exc.args[0]
            else:
                answered = True
                info = view.topics.get(topic)
                if info is not None and info.error is not None and not info.error.retriable():
                    err = info.error
                    raise KafkaException(KafkaError.of(
                        err.code(), f"{err.str()} (topic {topic!r}; no record was queued)"))
                with acc.lock:
                    if t.num_partitions or self.learn_topic(t):
                        return t
            time.sleep(max(0.0, min(delay, deadline - time.monotonic())))
            delay = min(delay * 2, config["retry.backoff.max.ms"] / 1000.0)
        if answered:
            missing = _missing(self.client.cluster, topic)
        else:
            missing = "no broker answered a metadata request" + (
                f" (last error: {last.str()})" if last is not None else "")
        raise KafkaException(KafkaError.of(
            KafkaError._TIMED_OUT,
            f"Local: Timed out: partitions of topic {topic!r} not known after {timeout:g}s "
            f"(request.timeout.ms): {missing}; no record was queued"))

    def wait_for_room(self, count: int, size: int) -> None:
        """Back-pressure: serve reports until the producer may hold ``count`` more records."""
        acc = self.acc
        if acc.count + count <= acc.max_count and acc.bytes + size <= acc.max_bytes:
            return
        deadline = time.monotonic() + (self.config["delivery.timeout.ms"] / 1000.0 or 3600.0)
        while acc.count and (acc.count + count > acc.max_count or acc.bytes + size > acc.max_bytes):
            self.client.wakeup()
            self.serve()
            if time.monotonic() > deadline:
                raise BufferError("Local: Queue full (no room freed within delivery.timeout.ms)")
            self.reports.wait(0.05)

    def unacked(self) -> int:
        """Encoded bytes of the batches this object queued that are not finished yet (an
        upper bound: a finished batch counts until those queued before it finished too)."""
        with self.lock:
            pending = self.pending
            while pending:
                batch = pending[0][0]()
                if batch is not None and not batch.reported:
                    break
                self.pending_bytes -= pending.popleft()[1]
            return self.pending_bytes

    def wait_for_acks(self, ahead: int, deadline: list[float]) -> None:
        """Wait while more than ``ahead`` encoded bytes are unfinished. ``deadline`` holds
        when the calling ``produce_batch`` stops waiting (set on its first wait, for
        ``delivery.timeout.ms``): past it, batches are queued without waiting (their reports
        will tell how they went)."""
        if self.unacked() <= ahead:
            return
        now = time.monotonic()
        if not deadline:
            deadline.append(now + (self.config["delivery.timeout.ms"] / 1000.0 or 3600.0))
        self.client.wakeup()
        while now < deadline[0]:
            self.reports.arm()
            if self.unacked() <= ahead:
                return
            self.reports.wait_armed(min(0.05, deadline[0] - now))
            now = time.monotonic()

    def encode_sealed(self, builder: Any) -> Future:
        """Build a sealed batch of ``produce()`` on an encoder thread (compression then runs
        beside the application and I/O threads); the I/O thread is woken when it is done."""
        fut = self.encoder_pool().submit(builder.build)
        fut.add_done_callback(self._encoded)
        return fut

    def _encoded(self, fut: Future) -> None:
        self.client.wakeup()

    def close(self) -> None:
        """Stop the encoder threads."""
        if self.encoder is not None:
            self.encoder.shutdown(wait=False)
            self.encoder = None


def partly_queued(exc: BaseException, rows: np.ndarray, n: int) -> None:
    """``exc`` raised by a ``produce_batch`` call after some of its records were queued:
    ``exc.queued_rows`` holds their indices in the columns (they will be delivered and
    reported as usual) and a note says how many; the other rows were not queued."""
    exc.queued_rows = rows  # type: ignore[attr-defined]
    add_note = getattr(exc, "add_note", None)  # Python 3.11+
    if add_note is not None:
        add_note(f"produce_batch queued {len(rows)} of {n} records before this error (their "
                 "row indices are in this exception's queued_rows); the others were not queued")


def _assign_sticky(acc: Any, t: Any, parts: np.ndarray, loose: np.ndarray,
                   sizes: np.ndarray | int) -> None:
    """Records left to the sticky partitioner: one partition per batch-sized run (KIP-480)."""
    ends = _chunk_ends(sizes, loose, len(loose), max(1, acc.batch_size - BATCH_OVERHEAD),
                       acc.batch_records)
    start = 0
    with acc.lock:
        for end in ends.tolist():
            parts[loose[start:end]] = t.sticky
            acc.next_sticky(t)
            start = end


def _missing(view: Any, topic: str) -> str:
    """Why the cluster metadata ``view`` gives no partitions for ``topic``."""
    info = view.topics.get(topic)
    if info is None:
        return "the cluster does not report the topic"
    if info.error is not None:
        return f"the cluster reports {info.error.name()} for it ({info.error.str()})"
    return "the cluster reports no partitions for it"


def produce_dicts(produce: Callable[..., None], topic: str, messages: list[dict], partition: int,
                  cb: Any) -> int:
    """confluent-kafka's ``produce_batch(topic, [dict, ...])``: failed dicts get ``_error``."""
    queued = 0
    for i, m in enumerate(messages):
        unknown = set(m) - {"value", "key", "partition", "timestamp", "headers", "callback",
                            "on_delivery", "_error"}
        if unknown:
            raise TypeError(f"messages[{i}] has unknown field(s): {', '.join(sorted(unknown))}")
        try:
            produce(topic, m.get("value"), m.get("key"), m.get("partition", partition),
                      m.get("callback") or m.get("on_delivery") or cb,
                      m.get("timestamp", 0) or 0, m.get("headers"))
        except BufferError as exc:
            m["_error"] = KafkaError.of(KafkaError._QUEUE_FULL, str(exc))
        except KafkaException as exc:
            m["_error"] = exc.args[0]
        else:
            m.pop("_error", None)
            queued += 1
    return queued
