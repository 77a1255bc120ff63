"""A compiled class's methods called on an object of another type (``Message.topic(None)``)
raise TypeError: the C code never reads another object's memory as its own fields."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kafka_fast.records import NATIVE

MODULES = ("kafka_fast._native._columns", "kafka_fast._native._crc32c",
           "kafka_fast._native._fetchwire", "kafka_fast._native._message",
           "kafka_fast._native._partition", "kafka_fast._native._producewire",
           "kafka_fast._native._records", "kafka_fast._native._sockio",
           "kafka_fast.producer._produce", "kafka_fast.producer._routing")

# Calls every public method of every class of the modules with None (and nothing else) as
# self, printing each before the call: a crash names the last one.
PROBE = r"""
import importlib, sys
for name in sys.argv[1:]:
    module = importlib.import_module(name)
    for cname, cls in sorted(vars(module).items()):
        # (Message is named where users import it from: kafka_fast.message)
        if not isinstance(cls, type) or cls.__module__ not in (name, "kafka_fast.message"):
            continue
        for mname, method in sorted(vars(cls).items()):
            if mname.startswith("__") or not callable(method):
                continue
            print(f"{name}.{cname}.{mname}", flush=True)
            try:
                getattr(cls, mname)(None)
            except TypeError:
                continue
            except Exception as exc:
                print(f"  raised {type(exc).__name__}: {exc}", flush=True)
                continue
            print("  accepted None", flush=True)
"""


@pytest.mark.skipif(not NATIVE, reason="the compiled modules are not in use")
def test_methods_refuse_an_object_of_another_type():
    done = subprocess.run([sys.executable, "-c", PROBE, *MODULES], capture_output=True,
                          text=True, timeout=120)
    lines = done.stdout.splitlines()
    assert done.returncode == 0, f"crashed ({done.returncode}) in {lines[-1:]}"
    called = [line for line in lines if not line.startswith("  ")]
    assert "kafka_fast._native._message.Message.topic" in called
    assert "kafka_fast._native._records.RecordBatch.records" in called
    assert [line for line in lines if line.startswith("  ")] == []
