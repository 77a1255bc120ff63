# cython: language_level=3
"""``Producer.produce``, compiled (twin: ``kafka_fast._pure.produce``).

A record whose topic and partitions are known and whose arguments need no conversion goes
straight into its partition's open batch here, reading the routing state's C fields
(``_routing.pxd``) and choosing the partition with the compiled partitioner; everything else
takes ``self._produce``, the general path in ``kafka_fast.producer.producer``.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_GetItem
from cpython.object cimport PyObject
from libc.stdint cimport uint8_t
from posix.time cimport CLOCK_REALTIME, clock_gettime, timespec

from kafka_fast._native._partition cimport choose_partition
from kafka_fast.producer._routing cimport (
    PartitionRoute,
    RouterState,
    TopicRoute,
    lock_give,
    lock_take,
)

from kafka_fast.producer.arguments import as_headers

#: A record without a report in a batch whose other records have one (see RecordEntries).
cdef tuple _NO_ENTRY = (None, None, None, None, 0)


cdef class ProduceRouter:
    """``Producer.produce``: a record whose topic and partitions are known and whose arguments
    need no conversion goes straight into its partition's open batch here (with its delivery
    entry when a callback asks for one); everything else takes ``self._produce`` (the general
    path, in Python)."""

    cdef public RouterState _acc
    cdef public object _txn
    cdef public object _default_cb

    def produce(self, topic, value=None, key=None, partition=-1, on_delivery=None,
                timestamp=0, headers=None, *, callback=None):
        """Queue one record; its delivery is reported by ``poll()``/``flush()``.

        ``value``/``key``: bytes, str (utf-8) or None. ``partition=-1`` lets the partitioner
        choose. ``on_delivery`` (alias ``callback``) is called as ``cb(err, msg)``.
        ``timestamp``: milliseconds since the epoch (0 = now). ``headers``: list of
        ``(name, value)`` tuples or a dict. Raises BufferError when the queue is full and
        KafkaException (MSG_SIZE_TOO_LARGE, _UNKNOWN_PARTITION, ...) for records that cannot
        be sent.
        """
        cdef RouterState acc = self._acc
        cdef PyObject *tp
        cdef TopicRoute t
        cdef PartitionRoute ps
        cdef int p
        cdef long long ts = 0
        cdef bint done = False
        cdef timespec now
        cb = on_delivery if on_delivery is not None else (
            callback if callback is not None else self._default_cb)
        if (self._txn is None and acc is not None
                and type(partition) is int and -1 <= partition < 0x7FFFFFFF
                and type(timestamp) is int and 0 <= timestamp < 0x3FFFFFFFFFFFFFFF
                and (value is None or type(value) is bytes)
                and (key is None or type(key) is bytes)
                and (cb is None or callable(cb))
                and (headers is None or type(headers) is list)):
            if headers is not None:
                headers = as_headers(headers)
            ts = timestamp
            if cb is not None and ts == 0:
                clock_gettime(CLOCK_REALTIME, &now)
                ts = <long long>now.tv_sec * 1000 + now.tv_nsec // 1000000
            lock_take(acc.lock)
            try:
                if acc.count < acc.count_limit and not acc.linger_due:
                    tp = PyDict_GetItem(acc.topics, topic)
                    if tp != NULL:
                        t = <TopicRoute>tp
                        p = partition
                        if t.num_partitions > 0 and p < t.num_partitions:
                            if p < 0:
                                if key is None:
                                    p = choose_partition(NULL, 0, True, t.num_partitions,
                                                         acc.algorithm)
                                else:
                                    p = choose_partition(
                                        <const uint8_t *>PyBytes_AS_STRING(key),
                                        PyBytes_GET_SIZE(key), False, t.num_partitions,
                                        acc.algorithm)
                                if p < 0:
                                    p = t.sticky
                            ps = <PartitionRoute>t.parts[p]
                            b = ps.fast
                            if b is not None and len(b) < acc.batch_records:
                                entries = ps.entries
                                if cb is None:
                                    if headers is None and ts == 0:
                                        done = b.append(value, key)
                                    else:
                                        done = b.append(value, key, ts or None, headers)
                                    if done and entries is not None:
                                        entries.items.extend(_NO_ENTRY)
                                elif entries is not None:
                                    done = b.append(value, key, ts, headers)
                                    if done:
                                        entries.items.extend((cb, key, value, headers, ts))
                                # else: the general path starts this batch's entries
                                if done:
                                    acc.count += 1
            finally:
                lock_give(acc.lock)
            if done:
                return None
        return self._produce(topic, value, key, partition, on_delivery, timestamp, headers,
                             callback)
