"""The groups ``make test`` schedules by (tests/harness/scheduling.py): files sharing a
JVM-backed session fixture are one group, transitively; the wheel tests are one group each;
every other file is its own group."""

from __future__ import annotations

from dataclasses import dataclass

from harness.scheduling import SPLIT, groups


@dataclass
class _Item:
    nodeid: str
    fixturenames: tuple[str, ...] = ()


def test_files_sharing_a_jvm_fixture_are_one_group_and_wheel_tests_one_each():
    wheels = SPLIT[0]
    items = [
        _Item("tests/a/test_one.py::test_x", ("kafka", "apache_cluster_session")),
        _Item("tests/a/test_one.py::test_y", ("kafka",)),
        _Item("tests/b/test_two.py::test_z", ("apache_cluster_session", "spark")),
        _Item("tests/c/test_three.py::test_w", ("spark",)),
        _Item("tests/d/test_four.py::test_v", ("kafka", "tansu")),
        _Item("tests/d/test_five.py::test_u", ("apache_share_kafka",)),
        _Item(f"{wheels}::test_w[3.10]", ("kafka",)),
        _Item(f"{wheels}::test_w[3.11]", ("kafka",)),
    ]
    assert groups(items) == {  # type: ignore[arg-type]
        "tests/a/test_one.py": "apache_cluster_session+spark",
        "tests/b/test_two.py": "apache_cluster_session+spark",
        "tests/c/test_three.py": "apache_cluster_session+spark",
        "tests/d/test_four.py": "tests/d/test_four.py",
        "tests/d/test_five.py": "apache_share_kafka",
        f"{wheels}::test_w[3.10]": f"{wheels}::test_w[3.10]",
        f"{wheels}::test_w[3.11]": f"{wheels}::test_w[3.11]",
    }
