"""Turning Spark rows into the column lists ``Producer.produce_batch`` takes.

Values and keys: bytes-like pass through, ``str`` is UTF-8 encoded, ``None`` stays null.
With ``value_format="json"`` every other value (dict, list, Row, number, bool) is serialised
as JSON; without it such a value raises ``TypeError`` naming the column. Headers: a list of
``(name, value)`` pairs or ``Row(key, value)`` structs (Spark's Kafka-sink shape), or a dict.
Timestamps: ``datetime`` or integer milliseconds since the epoch.
"""

from __future__ import annotations

import datetime as _dt
import json
import operator
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

VALUE_FORMATS = (None, "json")
_BYTES_LIKE = (bytes, bytearray, memoryview)


def encode_value(value: Any, column: str, value_format: str | None = None) -> bytes | None:
    """One value or key as bytes (or None); ``column`` names it in errors."""
    if value is None or type(value) is bytes:
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, _BYTES_LIKE):
        return bytes(value)
    if value_format == "json":
        return json.dumps(_jsonable(value), separators=(",", ":"), ensure_ascii=False,
                          default=_json_default).encode("utf-8")
    raise TypeError(
        f"column {column!r} holds a {type(value).__name__}; Kafka values must be bytes or str "
        "(pass value_format='json' to serialise other values as JSON)"
    )


def _jsonable(value: Any) -> Any:
    as_dict = getattr(value, "asDict", None)  # pyspark Row (a struct column)
    if as_dict is not None and isinstance(value, tuple):
        return as_dict(recursive=True)
    return value


def _json_default(value: Any) -> Any:
    if isinstance(value, (_dt.datetime, _dt.date)):
        return value.isoformat()
    as_dict = getattr(value, "asDict", None)
    if as_dict is not None:
        return as_dict(recursive=True)
    if isinstance(value, _BYTES_LIKE):
        return bytes(value).decode("utf-8")
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def encode_headers(headers: Any, column: str) -> list[tuple[str, bytes | None]] | None:
    """Headers as ``[(name, value_bytes)]``; None or empty gives None."""
    if not headers:
        return None
    items = headers.items() if isinstance(headers, Mapping) else headers
    out = []
    for item in items:
        if isinstance(item, Mapping):
            name, value = item.get("key"), item.get("value")
        else:
            try:
                name, value = item
            except (TypeError, ValueError):
                raise TypeError(
                    f"column {column!r}: a header must be a (name, value) pair or a "
                    f"struct<key, value>, got {item!r}"
                ) from None
        if not isinstance(name, str):
            raise TypeError(f"column {column!r}: header name {name!r} is not a str")
        out.append((name, encode_value(value, column)))
    return out


def timestamp_ms(value: Any, column: str) -> int:
    """Milliseconds since the epoch; 0 (let the producer stamp it) for None."""
    if value is None:
        return 0
    if isinstance(value, _dt.datetime):
        return int(value.timestamp() * 1000)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise TypeError(
        f"column {column!r}: a timestamp must be a datetime or integer milliseconds, "
        f"got {type(value).__name__}"
    )


def _partition(value: Any, column: str) -> int:
    if value is None:
        return -1
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise TypeError(f"column {column!r}: a partition must be an integer >= 0, got {value!r}")


def getter(row: Any, column: str | int) -> Callable[[Any], Any]:
    """A fast accessor for ``column`` in rows shaped like ``row``.

    Spark ``Row`` objects and other named tuples are read by position, dicts by key,
    plain tuples/lists by integer index.
    """
    fields = getattr(row, "__fields__", None) or getattr(row, "_fields", None)
    if isinstance(column, int):
        return operator.itemgetter(column)
    if fields is not None:
        try:
            return operator.itemgetter(list(fields).index(column))
        except ValueError:
            raise KeyError(f"column {column!r} is not in the rows (columns: {list(fields)})") from None
    if isinstance(row, Mapping):
        if column not in row:
            raise KeyError(f"column {column!r} is not in the rows (keys: {list(row)})")
        return operator.itemgetter(column)
    raise TypeError(
        f"cannot read column {column!r} from a {type(row).__name__}; use Rows, dicts, or "
        "integer column positions for tuples"
    )


@dataclass(frozen=True)
class ColumnSpec:
    """Which row fields feed which record part."""

    value_col: str | int = "value"
    key_col: str | int | None = None
    headers_col: str | int | None = None
    partition_col: str | int | None = None
    timestamp_col: str | int | None = None
    value_format: str | None = None

    def __post_init__(self) -> None:
        if self.value_format not in VALUE_FORMATS:
            raise ValueError(f"value_format must be None or 'json', got {self.value_format!r}")


@dataclass
class Columns:
    """One chunk of records as parallel lists (``partitions`` only with a partition column)."""

    values: list[bytes | None] = field(default_factory=list)
    keys: list[bytes | None] | None = None
    headers: list[list[tuple[str, bytes | None]] | None] | None = None
    timestamps: list[int] | None = None
    partitions: list[int] | None = None

    def __len__(self) -> int:
        return len(self.values)

    def by_partition(self) -> Iterator[tuple[int, Columns]]:
        """``(partition, columns)`` groups in first-seen order, order kept inside a group;
        a single ``(-1, self)`` when there is no partition column."""
        if self.partitions is None:
            yield -1, self
            return
        groups: dict[int, list[int]] = {}
        for i, p in enumerate(self.partitions):
            groups.setdefault(p, []).append(i)
        for p, idx in groups.items():
            yield p, Columns(
                values=[self.values[i] for i in idx],
                keys=None if self.keys is None else [self.keys[i] for i in idx],
                headers=None if self.headers is None else [self.headers[i] for i in idx],
                timestamps=None if self.timestamps is None else [self.timestamps[i] for i in idx],
            )


def chunks(rows: Iterable[Any], spec: ColumnSpec, size: int) -> Iterator[Columns]:
    """Read ``rows`` into ``Columns`` of up to ``size`` records each."""
    it = iter(rows)
    for first in it:
        value_of = getter(first, spec.value_col)
        key_of = getter(first, spec.key_col) if spec.key_col is not None else None
        headers_of = getter(first, spec.headers_col) if spec.headers_col is not None else None
        part_of = getter(first, spec.partition_col) if spec.partition_col is not None else None
        ts_of = getter(first, spec.timestamp_col) if spec.timestamp_col is not None else None
        break
    else:
        return
    vcol, kcol, fmt = str(spec.value_col), str(spec.key_col), spec.value_format
    hcol, pcol, tcol = str(spec.headers_col), str(spec.partition_col), str(spec.timestamp_col)
    pending: Iterable[Any] = _prepend(first, it)
    while True:
        cols = Columns(
            keys=[] if key_of else None,
            headers=[] if headers_of else None,
            timestamps=[] if ts_of else None,
            partitions=[] if part_of else None,
        )
        values, keys = cols.values, cols.keys
        for n, row in enumerate(pending, 1):
            v = value_of(row)
            values.append(v if v is None or type(v) is bytes else encode_value(v, vcol, fmt))
            if keys is not None:
                k = key_of(row)
                keys.append(k if k is None or type(k) is bytes else encode_value(k, kcol))
            if headers_of is not None:
                cols.headers.append(encode_headers(headers_of(row), hcol))
            if ts_of is not None:
                cols.timestamps.append(timestamp_ms(ts_of(row), tcol))
            if part_of is not None:
                cols.partitions.append(_partition(part_of(row), pcol))
            if n >= size:
                break
        if not values:
            return
        yield cols
        pending = it


def _prepend(first: Any, rest: Iterator[Any]) -> Iterator[Any]:
    yield first
    yield from rest
