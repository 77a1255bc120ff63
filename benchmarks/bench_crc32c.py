"""CRC32C throughput: every compiled path of kafka_fast against google-crc32c, same process.

For each buffer size, each contender runs a timed loop of calls (about ``--mb`` MB per run);
runs of all contenders are interleaved on a fresh buffer per run, and the table shows the
median GB/s over ``--runs`` runs and the ratio to google-crc32c on the same size.

    python benchmarks/bench_crc32c.py [--runs 9] [--mb 256] [--sizes 1024,65536,1048576]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from collections.abc import Callable

import google_crc32c

from kafka_fast._native import _crc32c as native
from kafka_fast._pure import crc32c as pure


def _cpu_flags() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            flags = next(line for line in f if line.startswith("flags")).split()
    except (OSError, StopIteration):
        return "unknown"
    wanted = ("sse4_2", "pclmulqdq", "avx2", "avx512f", "vpclmulqdq")
    return " ".join(f for f in wanted if f in flags)


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            return next(line for line in f if line.startswith("model name")).split(":", 1)[1].strip()
    except (OSError, StopIteration):
        return platform.processor() or "unknown"


def _gbps(fn: Callable[[bytes], int], data: bytes, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn(data)
    return len(data) * calls / (time.perf_counter() - start) / 1e9


def measure(sizes: list[int], runs: int, mb: int, with_pure: bool) -> dict:
    """Median GB/s per (contender, size). Each run uses a freshly allocated buffer, shared by
    all contenders in that run, so the medians cover where buffers land in memory."""
    paths = native.available_impls()
    results: dict[tuple[str, int], float] = {}
    for size in sizes:
        calls = max(3, (mb << 20) // size)
        samples: dict[str, list[float]] = {name: [] for name in ("google-crc32c", *paths)}
        for _ in range(runs):
            data = os.urandom(size)
            expected = google_crc32c.value(data)
            samples["google-crc32c"].append(_gbps(google_crc32c.value, data, calls))
            for path in paths:
                native.use_impl(path)
                assert native.crc32c(data) == expected, path
                samples[path].append(_gbps(native.crc32c, data, calls))
        native.use_impl(None)
        if with_pure and size <= 65536:
            data = os.urandom(size)
            assert pure.crc32c(data) == google_crc32c.value(data)
            calls = max(1, (1 << 20) // size)
            samples["python"] = [_gbps(pure.crc32c, data, calls) for _ in range(3)]
        for name, values in samples.items():
            results[(name, size)] = statistics.median(values)
    return results


def _label(size: int) -> str:
    return f"{size >> 20} MiB" if size >= 1 << 20 and size % (1 << 20) == 0 else (
        f"{size >> 10} KiB" if size % 1024 == 0 else f"{size} B")


def _num(value: float) -> str:
    return f"{value:.2f}" if value >= 0.1 else f"{value:.2g}"


def render(results: dict, sizes: list[int]) -> str:
    names = list(dict.fromkeys(name for name, _ in results))
    head = "| implementation | " + " | ".join(f"{_label(s)} GB/s | ratio" for s in sizes) + " |"
    rule = "|---|" + "---:|---:|" * len(sizes)
    lines = [head, rule]
    for name in names:
        cells = []
        for size in sizes:
            value = results.get((name, size))
            google = results[("google-crc32c", size)]
            cells += ["-", "-"] if value is None else [_num(value), _num(value / google) + "x"]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9, help="timed runs per contender (median)")
    parser.add_argument("--mb", type=int, default=256, help="MB checksummed per timed run")
    parser.add_argument("--sizes", default="1024,65536,1048576", help="buffer sizes in bytes")
    parser.add_argument("--pure", action="store_true", help="also time the pure-Python twin")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"CPU: {_cpu_name()} ({os.cpu_count()} cpus); flags: {_cpu_flags()}")
    print(f"default path: {native.crc32c_impl()}; google-crc32c {google_crc32c.implementation}")
    print(f"median of {args.runs} runs, ~{args.mb} MB per run; ratio = ours / google-crc32c\n")
    print(render(measure(sizes, args.runs, args.mb, args.pure), sizes))


if __name__ == "__main__":
    main()
