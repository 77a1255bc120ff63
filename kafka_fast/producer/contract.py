"""The record contract for columns: ``produce_batch``'s column forms checked with the rules
``produce()`` applies to one record (``kafka_fast.producer.arguments``), whole columns at a
time in numpy (no Python code per record for arrays and packed columns).

Every entry point that takes records (``produce``, ``produce_batch`` in each column form,
``AIOProducer.produce_batch``, ``SerializingProducer`` and the Spark writers) goes through
these rules, so one bad argument gets the same error class naming the same field everywhere:

* ``topic``: a non-empty str (TypeError, ValueError).
* ``partition``: an int (not bool; numpy integers count) in the 32-bit range (TypeError,
  OverflowError); -1 lets the partitioner choose; any other partition the topic does not
  have fails with KafkaException ``_UNKNOWN_PARTITION`` (raised at once when the topic's
  partitions are known, reported on delivery otherwise).
* ``key``/``value``: bytes, str (utf-8), a buffer (bytearray, memoryview, numpy) or None
  (TypeError naming the field and row).
* ``headers``: a dict or a list of ``(name, value)`` tuples (TypeError).
* ``timestamp``: an int (not bool, not float; numpy integers count) of milliseconds,
  0 meaning "now" (TypeError), not negative (ValueError), at most
  :data:`~kafka_fast.producer.arguments.MAX_TIMESTAMP` (OverflowError).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import KafkaError, KafkaException
from .arguments import MAX_TIMESTAMP, as_timestamp, is_integral
from .partitioner import is_packed

_FORMS = "a list, a 2-D uint8 array or a packed (data, offsets[, nulls]) column"


def check_partition(topic: str, partition: int, num_partitions: int) -> None:
    """Raise produce()'s ``_UNKNOWN_PARTITION`` when ``partition`` (already checked by
    ``as_partition``) is neither -1 nor one of the topic's ``num_partitions``."""
    if partition != -1 and not 0 <= partition < num_partitions:
        raise KafkaException(KafkaError.of(
            KafkaError._UNKNOWN_PARTITION,
            f"Local: Unknown partition: {topic} has no partition {partition}"))


def record_count(column: Any, what: str = "values") -> int:
    """How many records a ``produce_batch`` column holds, with the errors ``as_column``
    gives for its form (rows themselves are checked when the column is converted). A tuple
    is a packed column only when ``is_packed`` says so (2 or 3 items, the second a numpy
    array of offsets); any other tuple holds records, as a list does."""
    if is_packed(column):
        return len(_packed_offsets(column[1], what)) - 1
    if isinstance(column, np.ndarray):
        return len(_array_rows(column, what))
    if isinstance(column, (list, tuple)):
        return len(column)
    raise TypeError(f"{what} must be {_FORMS}, not {type(column).__name__}")


def as_column(column: Any, what: str, convert: Callable[[Any, str], Any],
              first_not_bytes: Callable[..., int]) -> Any:
    """A ``produce_batch`` key or value column in the form the encoder takes: a list of
    bytes/None (items converted by ``convert`` as produce() converts one), a C-contiguous 2-D
    uint8 array, or a packed ``(uint8 data, int64 offsets[, bool nulls])`` tuple whose data
    this call keeps a buffer export of (so it cannot be released or resized meanwhile)."""
    if is_packed(column):
        return _packed(column, what)
    if isinstance(column, np.ndarray):
        return np.ascontiguousarray(_array_rows(column, what))
    if isinstance(column, (list, tuple)):
        out = list(column)
        i = first_not_bytes(out)
        while i >= 0:
            out[i] = convert(out[i], f"{what}[{i}]")
            i = first_not_bytes(out, i + 1)
        return out
    raise TypeError(f"{what} must be {_FORMS}, not {type(column).__name__}")


def _array_rows(array: np.ndarray, what: str) -> np.ndarray:
    if array.ndim != 2 or array.dtype != np.uint8:
        raise TypeError(f"{what} as an array must be 2-D uint8 (one row per record), "
                        f"got {array.ndim}-D {array.dtype}")
    return array


def _packed_offsets(offsets: np.ndarray, what: str) -> np.ndarray:
    if offsets.ndim != 1 or len(offsets) == 0:
        raise ValueError(f"{what} packed offsets must be a 1-D array of N + 1 row boundaries, "
                         f"got shape {offsets.shape}")
    if offsets.dtype.kind not in "iu":
        raise TypeError(f"{what} packed offsets must be integers, not {offsets.dtype}")
    return offsets


def _packed(column: tuple, what: str) -> tuple:
    offsets = _packed_offsets(column[1], what)
    data = column[0]
    try:
        if isinstance(data, np.ndarray):
            data = np.ascontiguousarray(data).view(np.uint8).reshape(-1)
        else:
            # A view of its own keeps the buffer exported (and so alive and unresizable) for
            # the whole call, even if the caller releases the memoryview it passed.
            data = np.frombuffer(memoryview(data), dtype=np.uint8)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{what} packed data must be a bytes-like buffer: {exc}") from None
    if offsets.dtype.kind == "u" and len(offsets) and offsets.max() > np.iinfo(np.int64).max:
        raise ValueError(f"{what} packed offsets must be within the data buffer")
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    n = len(offsets) - 1
    if n and (offsets[0] < 0 or offsets[n] > len(data)
              or bool(np.any(offsets[1:] < offsets[:n]))):
        raise ValueError(f"{what} packed offsets must be non-decreasing and within the data "
                         "buffer")
    if len(column) == 3 and column[2] is not None:
        nulls = np.ascontiguousarray(column[2]).astype(np.bool_, copy=False)
        if nulls.ndim != 1 or len(nulls) != n:
            raise ValueError(f"{what} packed nulls has {nulls.size} entries for {n} rows")
        return (data, offsets, nulls)
    return (data, offsets)


def timestamp_column(timestamps: Any, n: int, now: int) -> np.ndarray | None:
    """``produce_batch``'s ``timestamps`` (None, one timestamp for every record, or N of
    them) as int64 milliseconds with 0 replaced by ``now``; every value follows produce()'s
    rule and a bad one raises produce()'s error for it, naming its row."""
    if timestamps is None:
        return None
    if isinstance(timestamps, np.ndarray):
        arr = timestamps
    elif isinstance(timestamps, (list, tuple)):
        arr = _listed_timestamps(list(timestamps))
    elif is_integral(timestamps) or not hasattr(timestamps, "__len__"):
        ts = as_timestamp(timestamps)
        return np.full(n, ts or now, dtype=np.int64)
    else:
        arr = np.asarray(timestamps)
    if arr.ndim != 1 or len(arr) != n:
        raise ValueError(f"timestamps has {arr.size} entries for {n} records")
    if arr.dtype.kind not in "iu":
        if arr.dtype.kind == "O":
            arr = _listed_timestamps(arr.tolist())
        else:
            _refuse_timestamp(arr, 0)
    if n and arr.dtype.itemsize == 8 and int(
            (arr.view(np.uint64) - np.uint64(1)).max()) < MAX_TIMESTAMP:
        # One pass for the common case: every timestamp in 1..MAX (0 and negative numbers
        # wrap to the top of the unsigned range).
        return arr.view(np.int64)
    if n:
        low, high = arr.min(), arr.max()
        if low < 0:
            _refuse_timestamp(arr, int(np.argmax(arr < 0)))
        if high > MAX_TIMESTAMP:
            _refuse_timestamp(arr, int(np.argmax(arr > MAX_TIMESTAMP)))
    arr = arr.astype(np.int64, copy=False)
    if n and not arr.all():
        arr = np.where(arr == 0, now, arr)
    return arr


def _listed_timestamps(items: list) -> np.ndarray:
    """Timestamps given as Python objects: ints (and numpy integers) or produce()'s error."""
    kinds = set(map(type, items))
    if kinds - {int}:
        for i, kind in enumerate(map(type, items)):
            if kind is not int and not is_integral(items[i]):
                _refuse_timestamp(items, i)
    if items:
        low, high = min(items), max(items)
        if low < 0 or high > MAX_TIMESTAMP:
            at = next(i for i, t in enumerate(items) if t < 0 or t > MAX_TIMESTAMP)
            _refuse_timestamp(items, at)
    return np.asarray(items, dtype=np.int64)


def _refuse_timestamp(items: Any, at: int) -> None:
    """Raise produce()'s error for ``items[at]``, naming the row."""
    item = items[at]
    if isinstance(item, np.generic):
        item = item.item()
    try:
        as_timestamp(item)
    except (TypeError, ValueError, OverflowError) as exc:
        raise type(exc)(f"timestamps[{at}]: {exc}") from None
    raise AssertionError(f"timestamps[{at}] = {item!r} passed the per-record rule")


def partition_cells(values: np.ndarray, nulls: np.ndarray | None, column: str) -> np.ndarray:
    """A Spark ``partition`` column (the Row and Arrow writers): integers >= 0, null meaning
    "the partitioner chooses" (-1). Anything else raises the TypeError ``partition_cell``
    gives for one row."""
    if values.dtype.kind not in "iu":
        raise TypeError(f"column {column!r}: a partition must be an integer >= 0, "
                        f"got values of type {values.dtype}")
    out = values.astype(np.int64, copy=True)
    if nulls is not None and nulls.any():
        out[nulls] = -1
        bad = (out < 0) & ~nulls
    else:
        bad = out < 0
    if len(out) and (bad.any() or out.max() > np.iinfo(np.int32).max):
        at = int(np.argmax(bad | (out > np.iinfo(np.int32).max)))
        partition_cell(int(out[at]), column)
    return out


def partition_cell(value: Any, column: str) -> int:
    """One row's Spark partition cell: -1 for null, else an integer in 0..2**31-1."""
    if value is None:
        return -1
    if is_integral(value) and 0 <= value < (1 << 31):
        return int(value)
    raise TypeError(f"column {column!r}: a partition must be an integer >= 0, got {value!r}")
