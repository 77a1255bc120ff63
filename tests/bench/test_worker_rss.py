"""A benchmark case's peak RSS is its own program's, not the peak of the process that started it."""

from __future__ import annotations

import subprocess
import sys

from kafka_fast.bench.worker import peak_rss_mb


def test_peak_rss_is_the_programs_own():
    held = bytearray(200 * 1024 * 1024)  # the parent's peak is now above 200 MiB
    held[::4096] = b"x" * len(held[::4096])  # touch every page
    assert peak_rss_mb() > 200
    child = subprocess.run(
        [sys.executable, "-c", "from kafka_fast.bench.worker import peak_rss_mb;"
         "print(peak_rss_mb())"], capture_output=True, text=True, check=True, timeout=60)
    assert 5 < float(child.stdout) < 150, child.stdout
