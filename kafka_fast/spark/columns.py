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
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from ..producer.arguments import as_bytes, as_headers
from ..producer.contract import partition_cell

VALUE_FORMATS = (None, "json")
_BYTES_LIKE = (bytes, bytearray, memoryview)


def encode_value(value: Any, column: str, value_format: str | None = None) -> bytes | None:
    """One value as bytes (or None); ``column`` names it in errors."""
    if value_format == "json" and value is not None and not isinstance(value, (str, *_BYTES_LIKE)):
        return json.dumps(_jsonable(value), separators=(",", ":"), ensure_ascii=False,
                          default=_json_default).encode("utf-8")
    try:
        return as_bytes(value, f"column {column!r}")
    except TypeError as exc:
        raise TypeError(f"{exc} (pass value_format='json' to serialise other values as JSON)"
                        ) from None


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
    """Headers as ``[(name, value_bytes)]`` (None when there are none): a dict, or a list of
    ``(name, value)`` pairs, ``Row(key, value)`` structs or ``{"key", "value"}`` dicts."""
    if headers and not isinstance(headers, Mapping):
        headers = [(h.get("key"), h.get("value")) if isinstance(h, Mapping) else h
                   for h in headers]
    return as_headers(headers, f"column {column!r} headers")


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


def column_reader(row: Any, column: str | int) -> Callable[[list], list]:
    """A function giving ``column`` of every row in a list of rows shaped like ``row``.

    Spark ``Row`` objects, named tuples and plain tuples (integer ``column``) are read by
    position with ``tuple.__getitem__`` (``Row.__getitem__`` is Python code and several
    times slower); dicts by key.
    """
    fields = getattr(row, "__fields__", None) or getattr(row, "_fields", None)
    if isinstance(row, tuple):
        if isinstance(column, int):
            index = column
        elif fields is not None and column in fields:
            index = list(fields).index(column)
        else:
            raise KeyError(f"column {column!r} is not in the rows (columns: "
                           f"{list(fields) if fields is not None else 'unnamed'})")
        if not -len(row) <= index < len(row):
            raise KeyError(f"column {column!r} is not in rows of {len(row)} fields")
        get = tuple.__getitem__
        return lambda rows: [get(r, index) for r in rows]
    if isinstance(row, Mapping):
        if column not in row:
            raise KeyError(f"column {column!r} is not in the rows (keys: {list(row)})")
        return lambda rows: [r[column] for r in rows]
    if isinstance(row, list) and isinstance(column, int):
        return lambda rows: [r[column] for r in rows]
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
    chunk = list(islice(it, size))
    if not chunk:
        return
    first = chunk[0]

    def reader(column: str | int | None) -> Callable[[list], list] | None:
        return None if column is None else column_reader(first, column)

    value_of, key_of = column_reader(first, spec.value_col), reader(spec.key_col)
    headers_of, part_of = reader(spec.headers_col), reader(spec.partition_col)
    ts_of = reader(spec.timestamp_col)
    vcol, kcol, fmt = str(spec.value_col), str(spec.key_col), spec.value_format
    hcol, pcol, tcol = str(spec.headers_col), str(spec.partition_col), str(spec.timestamp_col)
    while chunk:
        yield Columns(
            values=[v if v is None or type(v) is bytes else encode_value(v, vcol, fmt)
                    for v in value_of(chunk)],
            keys=None if key_of is None else [
                k if k is None or type(k) is bytes else as_bytes(k, f"column {kcol!r}")
                for k in key_of(chunk)],
            headers=None if headers_of is None else [
                encode_headers(h, hcol) for h in headers_of(chunk)],
            timestamps=None if ts_of is None else [timestamp_ms(t, tcol) for t in ts_of(chunk)],
            partitions=None if part_of is None else [partition_cell(p, pcol) for p in part_of(chunk)],
        )
        chunk = list(islice(it, size))
