"""The physical floor of moving the benchmark's records: what any client must spend per
million records on this machine, with no Python object per record and no protocol work.

Each step runs on the benchmark payload (1M records of 100-byte values and 10-byte keys
unless told otherwise) in this process, timed as CPU (user+system) of this process only; the
peer end of the loopback socket is a separate process and is not counted. Median of
``--repeat`` runs of each step.

Produce side: hash every key for its partition (murmur2), copy keys and values into batches
(a destination already in memory), CRC32C over the batches, send them over loopback TCP.
Consume side: receive the same bytes over loopback TCP, CRC32C over them, copy keys and values
out into columns. The floor of a direction is the sum of its steps.

Compression, per codec (``--codecs``, lz4 and zstd unless told otherwise), apart from the
floor: compress the records of each batch the producer would make of the payload (the
uncompressed records of a 1 MB batch) with the library and default level kafka_fast uses,
and decompress them again into the pooled buffers the consumer reads from. A compressed path's
floor is the direction's floor plus its codec's step.

    python benchmarks/bench_floor.py [-n 1000000] [--repeat 5] [--codecs lz4 zstd] [--no-store]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from kafka_fast.bench import store  # noqa: E402
from kafka_fast.bench.payload import Payload  # noqa: E402
from kafka_fast.codecs.compression import compress, decompress_pooled  # noqa: E402
from kafka_fast.codecs.crc import crc32c  # noqa: E402
from kafka_fast.producer.partitioner import ALGORITHMS, partition_column  # noqa: E402
from kafka_fast.records import encode_batch  # noqa: E402
from kafka_fast.records.format import HEADER_SIZE  # noqa: E402

CHUNK = 1 << 20
#: the peer process: "sink" reads and discards until EOF, "source N" sends N bytes
PEER = r"""
import socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1)
print(s.getsockname()[1], flush=True)
c, _ = s.accept()
if sys.argv[1] == "sink":
    buf = bytearray(4 << 20)
    while c.recv_into(buf):
        pass
else:
    left, chunk = int(sys.argv[2]), bytes(1 << 20)
    while left > 0:
        left -= c.send(chunk[:min(left, len(chunk))])
    c.close()
"""


def _cpu() -> float:
    return time.process_time()  # user+system of every thread of this process, ns resolution


def _peer(*args: str) -> tuple[subprocess.Popen, socket.socket]:
    proc = subprocess.Popen([sys.executable, "-c", PEER, *args], stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout is not None
    port = int(proc.stdout.readline())
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return proc, sock


def send_loopback(total: int) -> float:
    """CPU seconds to send ``total`` bytes over loopback TCP, 1 MB per call."""
    proc, sock = _peer("sink")
    chunk = memoryview(os.urandom(CHUNK))
    try:
        start = _cpu()
        left = total
        while left > 0:
            sock.sendall(chunk[:min(left, CHUNK)])
            left -= CHUNK
        spent = _cpu() - start
    finally:
        sock.close()
        proc.wait(30)
    return spent


def receive_loopback(total: int) -> float:
    """CPU seconds to receive ``total`` bytes over loopback TCP into a reused buffer."""
    proc, sock = _peer("source", str(total))
    buf = bytearray(4 << 20)
    try:
        start = _cpu()
        got = 0
        while got < total:
            n = sock.recv_into(buf)
            if not n:
                break
            got += n
        spent = _cpu() - start
    finally:
        sock.close()
        proc.wait(30)
    if got != total:
        raise RuntimeError(f"received {got} of {total} bytes")
    return spent


def timed(fn: Callable[[], object]) -> float:
    start = _cpu()
    fn()
    return _cpu() - start


def steps(p: Payload) -> dict[str, dict[str, Callable[[], float]]]:
    """Each direction's steps, as functions returning the CPU seconds they took."""
    n = len(p)
    wire = p.nbytes + n * 8  # records with their few bytes of framing (varints)
    batch = 1 << 20
    rows_per_batch = batch // (p.values.shape[1] + p.keys.shape[1] + 8)
    murmur = ALGORITHMS["murmur2_random"]
    out = np.empty((rows_per_batch, p.values.shape[1] + p.keys.shape[1]), dtype=np.uint8)
    out.fill(0)  # in memory before timing: a client reuses its batch buffers
    encoded = np.frombuffer(os.urandom(wire), dtype=np.uint8)
    blocks = [encoded[a:a + batch] for a in range(0, wire, batch)]

    def copy_rows() -> None:
        k = p.keys.shape[1]
        for a in range(0, n, rows_per_batch):
            b = min(n, a + rows_per_batch)
            out[:b - a, :k] = p.keys[a:b]
            out[:b - a, k:] = p.values[a:b]

    def crc_blocks() -> None:
        for blk in blocks:
            crc32c(blk)

    return {
        "produce": {
            "partition keys (murmur2)": lambda: timed(lambda: partition_column(p.keys, 6, murmur)),
            "copy keys and values into batches": lambda: timed(copy_rows),
            "CRC32C of the batches": lambda: timed(crc_blocks),
            "send over loopback TCP": lambda: send_loopback(wire),
        },
        "consume": {
            "receive over loopback TCP": lambda: receive_loopback(wire),
            "CRC32C of the batches": lambda: timed(crc_blocks),
            "copy keys and values out into columns": lambda: timed(copy_rows),
        },
    }


def codec_steps(p: Payload, codec: str) -> dict[str, tuple[str, Callable[[], float]]]:
    """``{direction: (step name, function returning its CPU seconds)}`` for ``codec``: the
    records of each batch compressed (produce) and decompressed (consume)."""
    n = len(p)
    rows_per_batch = min(10_000, (1 << 20) // (p.values.shape[1] + p.keys.shape[1] + 8))
    sections = [bytes(encode_batch(p.values[a:a + rows_per_batch], p.keys[a:a + rows_per_batch])
                      )[HEADER_SIZE:] for a in range(0, n, rows_per_batch)]
    packed = [compress(codec, s) for s in sections]

    def compress_all() -> None:
        for section in sections:
            compress(codec, section)

    def decompress_all() -> None:
        for blob in packed:
            with decompress_pooled(codec, blob):
                pass

    return {"produce": (f"compress the batches' records ({codec})",
                        lambda: timed(compress_all)),
            "consume": (f"decompress the batches' records ({codec})",
                        lambda: timed(decompress_all))}


def measured(fn: Callable[[], float], repeat: int) -> float:
    """The median of ``repeat`` runs of a step after one warm-up run (CPU seconds)."""
    fn()
    return statistics.median(fn() for _ in range(repeat))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", "--records", type=int, default=1_000_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--key-size", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--codecs", nargs="*", default=["lz4", "zstd"],
                    choices=["gzip", "snappy", "lz4", "zstd"])
    ap.add_argument("--results", default=str(store.DEFAULT_DIR))
    ap.add_argument("--no-store", action="store_true")
    args = ap.parse_args(argv)
    p = Payload.make(args.records, args.size, args.key_size)
    per_million = 1e6 / args.records
    results = []
    for direction, funcs in steps(p).items():
        total = 0.0
        for name, fn in funcs.items():
            cpu = measured(fn, args.repeat) * per_million
            total += cpu
            results.append({"direction": direction, "step": name, "cpu_s_per_million": cpu})
            print(f"{direction:8s} {name:40s} {cpu:6.3f} CPU s/M")
        results.append({"direction": direction, "step": "floor (sum)",
                         "cpu_s_per_million": total})
        print(f"{direction:8s} {'floor (sum)':40s} {total:6.3f} CPU s/M")
    for codec in args.codecs:
        for direction, (name, fn) in codec_steps(p, codec).items():
            cpu = measured(fn, args.repeat) * per_million
            results.append({"direction": direction, "step": name, "codec": codec,
                            "cpu_s_per_million": cpu})
            print(f"{direction:8s} {name:40s} {cpu:6.3f} CPU s/M")
    if not args.no_store:
        settings = {"records": args.records, "value_bytes": args.size,
                    "key_bytes": args.key_size, "repeat": args.repeat}
        if args.codecs:
            settings["codecs"] = args.codecs
        path = store.append(Path(args.results),
                            store.record("floor", "none (loopback TCP peer process)",
                                         settings, results))
        print(f"stored: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
