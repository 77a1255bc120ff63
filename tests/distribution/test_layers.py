"""tools/check_layers.py: no reaching into other objects' underscore attributes, no import
cycles between packages, on the repository and on made-up packages that break each rule."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHECK = ROOT / "tools" / "check_layers.py"


def run(package: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(CHECK), str(package)], capture_output=True,
                          text=True, timeout=60)


def test_the_package_keeps_both_rules():
    result = run(ROOT / "kafka_fast")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no private access across objects, no import cycles" in result.stdout


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_reaching_into_another_modules_private_attribute_is_reported(tmp_path):
    pkg = write(tmp_path / "pkg", {
        "__init__.py": "",
        "owner/__init__.py": "",
        "owner/core.py": "class Owner:\n    def __init__(self):\n        self._state = 1\n"
                         "    def __eq__(self, other):\n        return self._state == other._state\n",
        "helper/__init__.py": "",
        "helper/use.py": "import argparse\n\ndef peek(owner, p: argparse._SubParsersAction):\n"
                         "    return owner._state, owner.public, KafkaError._MSG_TIMED_OUT\n",
    })
    result = run(pkg)
    assert result.returncode == 1
    lines = [line for line in result.stdout.splitlines() if line]
    # owner._state from another module only; the same-module __eq__, the standard library's
    # private name and an ALL-CAPS constant are fine.
    assert lines == [f"helper{__import__('os').sep}use.py:4: reaches into owner._state"]


def test_an_import_cycle_between_packages_is_reported_unless_only_for_type_checking(tmp_path):
    files = {
        "__init__.py": "",
        "a/__init__.py": "",
        "a/one.py": "from ..b.two import B\n",
        "b/__init__.py": "",
        "b/two.py": "from ..a import one\nB = 1\n",
    }
    result = run(write(tmp_path / "cyclic", files))
    assert result.returncode == 1
    assert "import cycle a -> b -> a" in result.stdout
    files["b/two.py"] = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                         "    from ..a import one\nB = 1\n")
    result = run(write(tmp_path / "typed", files))
    assert result.returncode == 0, result.stdout


def test_an_import_inside_a_function_closes_a_cycle_too(tmp_path):
    files = {
        "__init__.py": "",
        "a/__init__.py": "",
        "a/one.py": "from ..b.two import B\n",
        "b/__init__.py": "",
        "b/two.py": "B = 1\n\nclass C:\n    def late(self):\n        from ..a import one\n"
                    "        return one\n",
    }
    result = run(write(tmp_path / "late", files))
    assert result.returncode == 1
    assert "import cycle a -> b -> a" in result.stdout and "b/two.py:5" in result.stdout


@pytest.mark.parametrize("body", [
    "    match kind:\n        case 1:\n            from ..a import one\n            return one\n",
    "    try:\n        pass\n    except* ValueError:\n        from ..a import one\n",
], ids=["match", "except-star"])
def test_an_import_in_a_match_case_or_except_star_closes_a_cycle_too(tmp_path, body):
    files = {
        "__init__.py": "",
        "a/__init__.py": "",
        "a/one.py": "from ..b.two import B\n",
        "b/__init__.py": "",
        "b/two.py": "B = 1\n\ndef late(kind):\n" + body,
    }
    result = run(write(tmp_path / "late", files))
    assert result.returncode == 1
    assert "import cycle a -> b -> a" in result.stdout and "b/two.py:" in result.stdout
