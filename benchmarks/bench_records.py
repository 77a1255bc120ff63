"""Record engine benchmark: kafka_fast vs aiokafka (Cython) vs kafka-python (pure Python).

Same run, same machine, same data: N records of 100-byte values with 10-byte keys, cut into
batches of BATCH records, uncompressed and with lz4/zstd. Reports records per second (median of
--repeat runs) and the ratios ours/aiokafka and ours/kafka-python.

    python benchmarks/bench_records.py [--records 200000] [--batch 8192] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # no idle BLAS threads competing for 2 CPUs

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from kafka_fast import records as kf
from kafka_fast.codecs.compression import codec_id

TS = 1_700_000_000_000


def make_data(n: int, seed: int = 7):
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 256, size=(n, 100), dtype=np.uint8)
    keys = rng.integers(0, 256, size=(n, 10), dtype=np.uint8)
    return keys, values


def chunks(n: int, batch: int):
    return [(i, min(i + batch, n)) for i in range(0, n, batch)]


def timed(fn: Callable[[], object], repeat: int) -> float:
    """Median CPU seconds of the calling thread over `repeat` runs (after a warm-up run).

    CPU time, not wall time: the machines are small and shared, CPU time is the steadier
    measure (nothing here sleeps or waits).
    """
    fn()
    runs = []
    for _ in range(repeat):
        t = time.thread_time()
        fn()
        runs.append(time.thread_time() - t)
    return statistics.median(runs)


def bench_codec(codec: str, keys, values, batch: int, repeat: int, slow_n: int):
    n = len(values)
    spans = chunks(n, batch)
    klist = [r.tobytes() for r in keys]
    vlist = [r.tobytes() for r in values]
    kbatches = [klist[a:b] for a, b in spans]  # a producer holds each batch's records already
    vbatches = [vlist[a:b] for a, b in spans]
    vdata = values.reshape(-1)
    kdata = keys.reshape(-1)
    voffs = np.arange(0, 100 * n + 1, 100, dtype=np.int64)
    koffs = np.arange(0, 10 * n + 1, 10, dtype=np.int64)
    results: dict[str, tuple[float, int]] = {}

    def run(name, fn, count=n):
        results[name] = (count / timed(fn, repeat), count)

    # --- encode -------------------------------------------------------------------------
    def ours_list():
        for vs, ks in zip(vbatches, kbatches, strict=True):
            kf.encode_batch(vs, ks, timestamps=TS, compression=codec)

    def ours_numpy():
        for a, b in spans:
            kf.encode_batch(values[a:b], keys[a:b], timestamps=TS, compression=codec)

    def ours_packed():
        for a, b in spans:
            kf.encode_batch((vdata, voffs[a:b + 1]), (kdata, koffs[a:b + 1]), timestamps=TS,
                            compression=codec)

    def ours_append():
        for a, b in spans:
            builder = kf.RecordBatchBuilder(compression=codec, batch_size=1 << 30)
            append = builder.append
            for i in range(a, b):
                append(vlist[i], klist[i], TS)
            builder.build()

    from aiokafka.record._crecords import DefaultRecordBatch as AioBatch
    from aiokafka.record._crecords import DefaultRecordBatchBuilder as AioBuilder

    cid = codec_id(codec)

    def aio_append():
        for a, b in spans:
            builder = AioBuilder(2, cid, 0, -1, -1, -1, 1 << 30)
            append = builder.append
            for i in range(a, b):
                append(i - a, TS, klist[i], vlist[i], [])
            builder.build()

    from kafka.record.default_records import DefaultRecordBatch as KpBatch
    from kafka.record.default_records import DefaultRecordBatchBuilder as KpBuilder

    slow_spans = chunks(slow_n, batch)

    def kp_append():
        for a, b in slow_spans:
            builder = KpBuilder(2, cid, False, -1, -1, -1, 1 << 30)
            append = builder.append
            for i in range(a, b):
                append(i - a, TS, klist[i], vlist[i], [])
            builder.build()

    run("encode_batch(list)", ours_list)
    run("encode_batch(numpy)", ours_numpy)
    run("encode_batch(packed)", ours_packed)
    run("builder.append loop", ours_append)
    run("aiokafka append loop", aio_append)
    run("kafka-python append loop", kp_append, slow_n)

    # --- decode -------------------------------------------------------------------------
    encoded = [kf.encode_batch(vlist[a:b], klist[a:b], timestamps=TS, compression=codec)
               for a, b in spans]
    fetch = b"".join(encoded)  # one buffer, as a Fetch response carries it
    slow_fetch = b"".join(encoded[: len(slow_spans)])

    def ours_records():
        for batch_ in kf.decode_batches(fetch):
            batch_.records()

    def ours_columns():
        for batch_ in kf.decode_batches(fetch):
            batch_.columns()

    def aio_read():
        for buf in encoded:
            list(AioBatch(buf))

    def kp_read():
        for buf in encoded[: len(slow_spans)]:
            list(KpBatch(buf))

    assert len(slow_fetch) > 0
    run("decode records()", ours_records)
    run("decode columns()", ours_columns)
    run("aiokafka reader", aio_read)
    run("kafka-python reader", kp_read, min(slow_n, n))
    return results


ROWS = [
    ("encode_batch(list)", "aiokafka append loop", "kafka-python append loop"),
    ("encode_batch(numpy)", "aiokafka append loop", "kafka-python append loop"),
    ("encode_batch(packed)", "aiokafka append loop", "kafka-python append loop"),
    ("builder.append loop", "aiokafka append loop", "kafka-python append loop"),
    ("decode records()", "aiokafka reader", "kafka-python reader"),
    ("decode columns()", "aiokafka reader", "kafka-python reader"),
]


def fmt_rate(r: float) -> str:
    return f"{r / 1e6:8.2f}M"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--batch", type=int, default=8192, help="records per batch (~1 MiB)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--slow-records", type=int, default=24_576,
                    help="records for kafka-python (pure Python, slow)")
    ap.add_argument("--codecs", default="none,lz4,zstd")
    args = ap.parse_args()

    keys, values = make_data(args.records)
    impl = "compiled" if kf.NATIVE else "pure Python"
    print(f"kafka_fast record engine ({impl}); {args.records} records of 100 B values + 10 B "
          f"keys in batches of {args.batch}; median of {args.repeat}; records per CPU-second")
    print()
    header = (f"{'codec':6} {'operation':22} {'ours':>10} {'aiokafka':>10} {'kafka-py':>10} "
              f"{'x aiokafka':>10} {'x kafka-py':>10}")
    print(header)
    print("-" * len(header))
    for codec in args.codecs.split(","):
        res = bench_codec(codec, keys, values, args.batch, args.repeat,
                          min(args.slow_records, args.records))
        for ours, aio, kp in ROWS:
            r, ra, rk = res[ours][0], res[aio][0], res[kp][0]
            print(f"{codec:6} {ours:22} {fmt_rate(r):>10} {fmt_rate(ra):>10} {fmt_rate(rk):>10} "
                  f"{r / ra:9.2f}x {r / rk:9.1f}x")
        print()


if __name__ == "__main__":
    main()
