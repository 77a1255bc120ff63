"""``KAFKA_FAST_NO_EXTENSIONS=1`` (the pure pass of ``make test``) really runs the pure-Python
twins: no compiled module of kafka_fast is loaded, and every place that picks an implementation
picked the twin."""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import kafka_fast
from kafka_fast._impl import FORCED_PURE

ROOT = Path(kafka_fast.__file__).resolve().parents[1]

# (module, attribute holding the implementation module or one of its functions,
#  compiled module, pure twin)
CHOICES = [
    ("kafka_fast.records", "_impl", "kafka_fast._native._records", "kafka_fast._pure.records"),
    ("kafka_fast.codecs.crc", "_module", "kafka_fast._native._crc32c", "kafka_fast._pure.crc32c"),
    ("kafka_fast.producer.partitioner", "_impl", "kafka_fast._native._partition",
     "kafka_fast._pure.partition"),
    ("kafka_fast.producer.routing", "_produce", "kafka_fast.producer._produce",
     "kafka_fast._pure.produce"),
    ("kafka_fast.producer.routing", "_routing", "kafka_fast.producer._routing",
     "kafka_fast._pure.routing"),
    ("kafka_fast.net.framing", "_sockio", "kafka_fast._native._sockio",
     "kafka_fast._pure.sockio"),
    ("kafka_fast.net.loop", "_sockio", "kafka_fast._native._sockio", "kafka_fast._pure.sockio"),
    ("kafka_fast.producer.wire", "_wire", "kafka_fast._native._producewire",
     "kafka_fast._pure.producewire"),
    ("kafka_fast.consumer.fetch_wire", "parse_fetch", "kafka_fast._native._fetchwire",
     "kafka_fast._pure.fetchwire"),
    ("kafka_fast.consumer.delivery", "_columns", "kafka_fast._native._columns",
     "kafka_fast._pure.columns"),
    ("kafka_fast.consumer.batch_view", "append_messages", "kafka_fast._native._columns",
     "kafka_fast._pure.columns"),
    ("kafka_fast.message", "_impl", "kafka_fast._native._message", "kafka_fast._pure.message"),
]
FLAGS = ["kafka_fast.records", "kafka_fast.codecs.crc", "kafka_fast.producer.partitioner",
         "kafka_fast.producer.routing", "kafka_fast.producer.wire", "kafka_fast.message"]


def in_use(module: str, attr: str) -> str:
    """Name of the implementation module ``module.attr`` comes from."""
    obj = getattr(importlib.import_module(module), attr)
    return obj.__name__ if isinstance(obj, type(sys)) else obj.__module__


def _built() -> bool:
    return importlib.util.find_spec("kafka_fast._native._records") is not None


def test_choices_follow_the_environment():
    """In this process: the twins under KAFKA_FAST_NO_EXTENSIONS=1, else the compiled modules
    when they are built."""
    if not FORCED_PURE and not _built():
        pytest.skip("the compiled modules are not built")
    for module, attr, native, pure in CHOICES:
        assert in_use(module, attr) == (pure if FORCED_PURE else native), (module, attr)
    for module in FLAGS:
        assert importlib.import_module(module).NATIVE is not FORCED_PURE, module


# Imports every module of the package (except the compiled ones and __main__), then reports
# what each implementation choice picked and which loaded modules are extension modules.
PROBE = r"""
import importlib, json, sys
from pathlib import Path
import kafka_fast
root = Path(kafka_fast.__file__).parent
names = []
for path in sorted(root.rglob("*.py")):
    rel = path.relative_to(root.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    if "_native" in parts or parts[-1] == "__main__":
        continue
    names.append(".".join(parts))
failed = {}
for name in names:
    try:
        importlib.import_module(name)
    except Exception as exc:  # an optional dependency (pyspark, ...) may be missing
        failed[name] = repr(exc)
choices = {}
for module, attr in json.loads(sys.argv[1]):
    obj = getattr(importlib.import_module(module), attr)
    choices[f"{module}.{attr}"] = obj.__name__ if isinstance(obj, type(sys)) else obj.__module__
loaded = sorted(name for name, mod in sys.modules.items()
                if name.startswith("kafka_fast")
                and (name.startswith("kafka_fast._native")
                     or not str(getattr(mod, "__file__", "") or "").endswith(".py")))
mapped = []
try:
    with open("/proc/self/maps") as maps:
        mapped = sorted({line.split()[-1] for line in maps
                         if str(root) in line and line.rstrip().endswith(".so")})
except OSError:
    pass
print(json.dumps({"imported": len(names) - len(failed), "failed": failed, "choices": choices,
                  "loaded": loaded, "mapped": mapped}))
"""


def test_no_compiled_module_is_loaded_under_no_extensions():
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAFKA_FAST_")}
    env["KAFKA_FAST_NO_EXTENSIONS"] = "1"
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    wanted = json.dumps([[module, attr] for module, attr, _, _ in CHOICES])
    proc = subprocess.run([sys.executable, "-c", PROBE, wanted], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-4000:]
    report = json.loads(proc.stdout.splitlines()[-1])
    assert report["imported"] > 50, report
    # only optional third-party dependencies may be missing, never a kafka_fast module
    assert not [n for n, err in report["failed"].items() if "kafka_fast" in err], report["failed"]
    assert report["choices"] == {f"{module}.{attr}": pure
                                 for module, attr, _, pure in CHOICES}
    assert report["loaded"] == []  # neither kafka_fast._native nor any extension module
    assert report["mapped"] == []  # and no shared object of the package in the process


# Imports every module of the package except the twins, then lists the twins that were loaded.
TWINS_PROBE = r"""
import importlib, json, sys
from pathlib import Path
import kafka_fast
root = Path(kafka_fast.__file__).parent
for path in sorted(root.rglob("*.py")):
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    if "_pure" in parts or parts[-1] == "__main__":
        continue
    try:
        importlib.import_module(".".join(parts))
    except Exception:  # an optional dependency (pyspark, ...) may be missing
        pass
import kafka_fast.records, kafka_fast.producer.routing
print(json.dumps({"native": [kafka_fast.records.NATIVE, kafka_fast.producer.routing.NATIVE],
                  "twins": sorted(n for n in sys.modules if n.startswith("kafka_fast._pure"))}))
"""


def test_no_twin_is_loaded_with_the_compiled_modules():
    """The compiled modules share nothing with the twins: with every module of the package
    imported, no module of ``kafka_fast._pure`` is loaded (editing a twin changes only the pure
    mode)."""
    if not _built():
        pytest.skip("the compiled modules are not built")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAFKA_FAST_")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    proc = subprocess.run([sys.executable, "-c", TWINS_PROBE], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-4000:]
    report = json.loads(proc.stdout.splitlines()[-1])
    assert report == {"native": [True, True], "twins": []}
