# cython: language_level=3
"""``Message``, compiled (twin: ``kafka_fast._pure.message``).

Positions (partition, offset, timestamp, leader epoch, latency, delivery count) are C fields
made into Python objects when asked for, so a consumed record costs its ``Message`` and its key
and value ``bytes``; the data fields (topic, key, value, headers, error) hold any object.
"""

cimport cython
from cpython.number cimport PyNumber_Index
from libc.stdint cimport int32_t, int64_t


cdef extern from "Python.h":
    ctypedef struct PyTypeObject:
        const char *tp_name
    void PyObject_GC_Track(object)
    void PyObject_GC_UnTrack(object)
    bint PyObject_GC_IsTracked(object)


cdef inline bint _atomic(object value) noexcept:
    """Whether ``value`` can hold no reference back to a Message (CPython's own test when it
    untracks a tuple or a dict)."""
    return value is None or type(value) is bytes or type(value) is str


cdef inline void _track(Message msg, object value) noexcept:
    # A field that may refer back to the message makes the collector watch it again.
    if not _atomic(value) and not PyObject_GC_IsTracked(msg):
        PyObject_GC_Track(msg)


cdef inline int64_t _int64(object value) except? -1:
    # Integers only (``__index__``), as operator.index: a float or a str is a TypeError.
    return PyNumber_Index(value)


cdef inline int32_t _int32(object value, str what) except? -1:
    cdef long long number = _int64(value)
    if not -2147483648 <= number <= 2147483647:
        raise OverflowError(f"{what} {number} does not fit in 32 bits")
    return <int32_t>number


@cython.binding(False)  # methods check their self: Message.topic(None) raises TypeError
cdef class Message:
    """A record with its topic, partition, offset and error (confluent-kafka's accessors)."""

    def __init__(self, topic=None, partition=-1, offset=-1001, key=None, value=None,
                 headers=None, error=None, timestamp=(0, 0), latency=None, leader_epoch=None,
                 delivery_count=-1):
        # As the twin: integers for the positions (negative is "none"), a (type, ms) tuple or
        # None for the timestamp, a 16-bit delivery count ("none" when not positive).
        cdef int32_t part = _int32(partition, "partition")
        cdef int64_t off = _int64(offset)
        if timestamp is None:
            timestamp = (0, 0)
        if not isinstance(timestamp, tuple) or len(timestamp) != 2:
            raise TypeError("timestamp must be a tuple of (int, int)")
        cdef int32_t tstype = _int32(timestamp[0], "timestamp type")
        cdef int64_t ts = _int64(timestamp[1])
        cdef double lat = -1.0 if latency is None else <double>latency
        cdef int32_t epoch = -1 if leader_epoch is None else _int32(leader_epoch, "leader_epoch")
        cdef long long count = _int64(delivery_count)
        if not -32768 <= count <= 32767:
            raise OverflowError(f"delivery_count {count} does not fit in 16 bits")
        _fill(self, topic, part if part >= 0 else -1, off, key, value, headers, tstype, ts,
              error, epoch)
        # __init__ called again on a message made untracked (``new_message``) tracks it, as
        # the setters do.
        for field in (topic, key, value, headers, error):
            _track(self, field)
        self.latency_ = lat
        self.delivered_ = <int32_t>count if count > 0 else -1

    def topic(self):
        """The topic name."""
        return self.topic_

    def partition(self):
        """The partition, or None if unassigned. A record produced to a partition its topic
        does not have reports that partition, as confluent-kafka does."""
        return None if self.partition_ == -1 else self.partition_

    def offset(self):
        """The offset, or None if unknown."""
        return None if self.offset_ < 0 else self.offset_

    def key(self):
        """The key bytes (None if null)."""
        return self.key_

    def value(self):
        """The value bytes (None if null)."""
        return self.value_

    def headers(self):
        """Headers as a list of ``(name, value)`` pairs (None for a record without any)."""
        return self.headers_

    def timestamp(self):
        """``(timestamp_type, timestamp_ms)``."""
        return (self.timestamp_type_, self.timestamp_)

    def error(self):
        """A ``KafkaError`` if this message reports an error, else None."""
        return self.error_

    def latency(self):
        """Produce latency in seconds (delivery reports only)."""
        return None if self.latency_ < 0 else self.latency_

    def leader_epoch(self):
        """The partition leader epoch of the record's batch, if known."""
        return None if self.leader_epoch_ < 0 else self.leader_epoch_

    def len(self):
        """Length of the value in bytes."""
        return len(self.value_) if self.value_ is not None else 0

    def __len__(self):
        return len(self.value_) if self.value_ is not None else 0

    def set_headers(self, headers):
        """Replace the headers."""
        _track(self, headers)
        self.headers_ = headers

    def set_key(self, key):
        """Replace the key."""
        _track(self, key)
        self.key_ = key

    def set_value(self, value):
        """Replace the value."""
        _track(self, value)
        self.value_ = value

    def set_topic(self, topic):
        """Replace the topic name."""
        _track(self, topic)
        self.topic_ = topic

    def set_error(self, error):
        """Replace the error."""
        _track(self, error)
        self.error_ = error

    def deserialized_key(self):
        """The key as a ``DeserializingConsumer`` left it (the same object as ``key()``)."""
        return self.key_

    def deserialized_value(self):
        """The value as a ``DeserializingConsumer`` left it (the same object as ``value()``)."""
        return self.value_

    def delivery_count(self):
        """How often a share group delivered this record; None outside share groups."""
        return None if self.delivered_ <= 0 else self.delivered_

    def __reduce__(self):
        """Pickled as confluent-kafka pickles it: the base class and its constructor's
        arguments (-1, -1001, -1.0 standing for "none")."""
        return (Message, self._args())

    cdef tuple _args(self):
        return (self.topic_, self.partition_, self.offset_, self.key_, self.value_,
                self.headers_, self.error_, (self.timestamp_type_, self.timestamp_),
                self.latency_ if not self.latency_ < 0 else -1.0, self.leader_epoch_,
                self.delivered_)

    def __eq__(self, other):
        if not isinstance(other, Message):
            return NotImplemented
        return self._args() == (<Message>other)._args()

    __hash__ = None

    def __repr__(self):
        return (f"Message(topic={self.topic_!r}, partition={self.partition_}, "
                f"offset={self.offset_}, key={self.key_!r}, error={self.error_!r})")


cdef inline void _fill(Message msg, object topic, int32_t partition, int64_t offset, object key,
                       object value, object headers, int32_t tstype, int64_t ts, object error,
                       int32_t epoch):
    msg.topic_ = topic
    msg.partition_ = partition
    msg.offset_ = offset if offset >= 0 else -1001
    msg.key_ = key
    msg.value_ = value
    msg.headers_ = headers
    msg.timestamp_type_ = tstype
    msg.timestamp_ = ts
    msg.error_ = error
    msg.leader_epoch_ = epoch if epoch >= 0 else -1


cdef Message new_message(object topic, int32_t partition, int64_t offset, object key,
                         object value, object headers, int32_t tstype, int64_t ts, object error,
                         int32_t epoch):
    """``build`` for compiled callers (``_columns.pyx``): tp_new without ``__init__``."""
    cdef Message msg = Message.__new__(Message)
    _fill(msg, topic, partition, offset, key, value, headers, tstype, ts, error, epoch)
    msg.latency_ = -1.0
    msg.delivered_ = -1
    if (headers is None and error is None and _atomic(key) and _atomic(value)
            and _atomic(topic)):
        # Nothing it holds can lead back to it: the cyclic collector need not visit the
        # message (a consumed batch is thousands of them); a setter given a container makes
        # it tracked again.
        PyObject_GC_UnTrack(msg)
    return msg


def build(topic, int32_t partition, int64_t offset, key, value, headers, int32_t timestamp_type,
          int64_t timestamp, error, int32_t leader_epoch):
    """A ``Message`` of these fields, the partition as given (a delivery report names the
    partition a record was produced to, even a negative one, as confluent-kafka's do); a
    negative offset or leader epoch is "none"."""
    return new_message(topic, partition, offset, key, value, headers, timestamp_type,
                       timestamp, error, leader_epoch)


# Named where users import it from, as the twin (``__module__``): pickles name
# ``kafka_fast.message.Message``, which loads in either mode and in later releases.
cdef const char *PUBLIC_NAME = "kafka_fast.message.Message"
(<PyTypeObject *>Message).tp_name = PUBLIC_NAME
