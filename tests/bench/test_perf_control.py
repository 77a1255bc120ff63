"""The benchmark stopwatch tells a controlling ``perf record`` when to sample."""

from __future__ import annotations

import os
import threading

from kafka_fast.bench.result import PERF_ACK, PERF_CTL, Stopwatch, perf_control


def _fake_perf(ctl: str, ack: str, commands: list[str], count: int) -> threading.Thread:
    """What ``perf record --control fifo:ctl,ack`` does: read a command, answer ``ack``."""

    def run() -> None:
        for _ in range(count):
            with open(ctl) as f:
                commands.append(f.readline().strip())
            with open(ack, "w") as f:
                f.write("ack\n")

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_stopwatch_enables_then_disables_sampling(tmp_path, monkeypatch):
    ctl, ack = str(tmp_path / "ctl"), str(tmp_path / "ack")
    os.mkfifo(ctl)
    os.mkfifo(ack)
    monkeypatch.setenv(PERF_CTL, ctl)
    monkeypatch.setenv(PERF_ACK, ack)
    commands: list[str] = []
    perf = _fake_perf(ctl, ack, commands, 2)
    sw = Stopwatch().start()
    assert commands == ["enable"]  # acknowledged before timing starts
    wall, cpu = sw.stop()
    perf.join(5)
    assert commands == ["enable", "disable"]
    assert wall >= 0 and cpu >= 0


def test_without_a_controlling_perf_nothing_is_written(tmp_path, monkeypatch):
    monkeypatch.delenv(PERF_CTL, raising=False)
    monkeypatch.delenv(PERF_ACK, raising=False)
    perf_control("enable")  # returns at once: no FIFO to open
    assert list(tmp_path.iterdir()) == []
