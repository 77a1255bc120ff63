"""Arrow arrays over numpy buffers, built with ``Array.from_buffers``.

``pyarrow.array`` checks every input against pandas types and so imports pandas (about 0.6-0.9
CPU seconds) in a process that has not: the first read of each Spark Python worker paid it.
These helpers make the same arrays without that conversion layer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def numeric(values: Any, arrow_type: Any) -> Any:
    """A null-free Arrow array of ``arrow_type`` (a fixed-width type: ints, timestamps) over
    the numpy array ``values``, whose item size must be the type's."""
    import pyarrow as pa

    data = np.ascontiguousarray(values)
    if data.ndim != 1 or data.itemsize * 8 != arrow_type.bit_width:
        raise ValueError(f"cannot view {data.dtype} x{data.shape} as Arrow {arrow_type}")
    return pa.Array.from_buffers(arrow_type, len(data), [None, pa.py_buffer(data)])


def strings(items: Sequence[str]) -> Any:
    """A null-free Arrow ``string`` array of ``items``."""
    import pyarrow as pa

    encoded = [s.encode() for s in items]
    offsets = np.zeros(len(encoded) + 1, np.int32)
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    return pa.Array.from_buffers(pa.string(), len(encoded),
                                 [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))])


def integer_values(array: Any) -> Any:
    """The values of an Arrow integer array as a numpy view of its data buffer (no copy);
    what a null's slot holds is unspecified, so callers mask nulls themselves."""
    import pyarrow as pa

    if not pa.types.is_integer(array.type):
        raise TypeError(f"not an integer array: {array.type}")
    kind = "i" if pa.types.is_signed_integer(array.type) else "u"
    dtype = np.dtype(f"{kind}{array.type.bit_width // 8}")
    data = array.buffers()[1]
    if data is None:  # an empty array may have no buffer
        return np.zeros(0, dtype)
    return np.frombuffer(data, dtype)[array.offset:array.offset + len(array)]
