"""Arrow arrays over numpy buffers (``kafka_fast.records.arrow``)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from kafka_fast.records.arrow import integer_values, numeric, strings


def test_numeric_arrays_of_contiguous_and_strided_values():
    assert numeric(np.array([3, -1, 7], np.int32), pa.int32()).to_pylist() == [3, -1, 7]
    strided = np.arange(10, dtype=np.int64)[1::3]
    got = numeric(strided, pa.int64())
    assert got.type == pa.int64() and got.to_pylist() == [1, 4, 7] and got.null_count == 0
    stamps = numeric(np.array([1_500, 2_000], np.int64), pa.timestamp("us", tz="UTC"))
    assert stamps.type == pa.timestamp("us", tz="UTC")
    assert stamps.cast(pa.int64()).to_pylist() == [1_500, 2_000]
    assert numeric(np.zeros(0, np.int8), pa.int8()).to_pylist() == []


def test_numeric_refuses_values_of_another_width():
    with pytest.raises(ValueError, match=r"cannot view int64 x\(2,\) as Arrow int32"):
        numeric(np.array([1, 2], np.int64), pa.int32())
    with pytest.raises(ValueError, match="as Arrow int8"):
        numeric(np.zeros((2, 2), np.int8), pa.int8())


def test_strings():
    got = strings(["t", "", "été"])
    assert got.type == pa.string() and got.to_pylist() == ["t", "", "été"]
    assert strings([]).to_pylist() == []


def test_integer_values_of_sliced_arrays_with_nulls():
    arr = pa.array([5, None, 7, 8, 9], pa.int16()).slice(1, 3)
    got = integer_values(arr)
    assert got.dtype == np.int16 and len(got) == 3 and got[1:].tolist() == [7, 8]
    assert integer_values(pa.array([255, 0], pa.uint8())).tolist() == [255, 0]
    assert integer_values(pa.array([], pa.int64())).tolist() == []
    with pytest.raises(TypeError, match="not an integer array: string"):
        integer_values(pa.array(["1"]))
