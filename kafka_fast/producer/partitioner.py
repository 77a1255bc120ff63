"""Partitioner front-end: the compiled hashing module, or its pure-Python twin."""

from __future__ import annotations

from typing import Any

import numpy as np

from kafka_fast._impl import load

_impl, NATIVE = load("_partition", "partition")

ALGORITHMS = _impl.ALGORITHMS
UNASSIGNED = _impl.UNASSIGNED
algorithm_id = _impl.algorithm_id
partition_key = _impl.partition_key
partition_column = _impl.partition_column
group_by_partition = _impl.group_by_partition
gather_packed = _impl.gather_packed
gather_rows = _impl.gather_rows
gather_list = _impl.gather_list
first_not_bytes = _impl.first_not_bytes
row_sizes = _impl.row_sizes
chunk_ends = _impl.chunk_ends
is_packed = _impl.is_packed
column_length = _impl.column_length
column_item = _impl.column_item
murmur2 = _impl.murmur2
fnv1a = _impl.fnv1a
consistent = _impl.consistent


def gather_column(column: Any, order: Any, start: int, stop: int, out: Any = None) -> Any:
    """Rows ``order[start:stop]`` of a ``produce_batch`` column (None, a list, a 2-D uint8
    array, copied into ``out`` when given, or a packed column), as a new column."""
    if column is None:
        return None
    if is_packed(column):
        return gather_packed(column, order, start, stop)
    if isinstance(column, np.ndarray):
        return gather_rows(column, order, start, stop, out)
    return gather_list(column, order, start, stop)


__all__ = [
    "ALGORITHMS", "NATIVE", "UNASSIGNED", "algorithm_id", "chunk_ends", "column_item",
    "column_length", "consistent", "first_not_bytes", "fnv1a", "gather_column", "gather_list",
    "gather_packed", "gather_rows", "group_by_partition",
    "is_packed", "murmur2", "partition_column", "partition_key", "row_sizes",
]
