"""Coverage-guided fuzzing (tools/fuzz.py, atheris) of the record decoder, decompression, the
protocol response decoder and the compiled entry points that take buffers: the committed
corpus replays cleanly, and a bounded fuzzing run per target finds nothing."""

from __future__ import annotations

import importlib
import importlib.util
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("kafka_fast_fuzz", ROOT / "tools" / "fuzz.py")
fuzz = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fuzz)

#: seconds per target (4 targets); FUZZ_SECONDS overrides
SECONDS = float(os.environ.get("FUZZ_SECONDS", 6))


@pytest.mark.parametrize("target", fuzz.TARGETS)
def test_corpus_replays(target):
    assert fuzz.replay([target]) == {target: len(list((fuzz.CORPUS / target).iterdir()))}
    assert len(list((fuzz.CORPUS / target).iterdir())) >= 3


@pytest.fixture(scope="module")
def atheris():
    try:
        return importlib.import_module("atheris")
    except ImportError:
        if os.environ.get("CI") == "true":
            raise
        pytest.skip("needs atheris: pip install atheris (or pip install -e '.[test]')")


@pytest.mark.parametrize("target", fuzz.TARGETS)
def test_bounded_fuzzing_finds_nothing(atheris, target, tmp_path):
    stats = fuzz.run(target, SECONDS, tmp_path / "corpus", tmp_path / "artifacts")
    print(f"fuzz {target}: {stats}")
    assert stats.runs > 100 and stats.coverage > 50
    assert not list((tmp_path / "artifacts").iterdir())
