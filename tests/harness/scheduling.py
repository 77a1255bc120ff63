"""How ``make test`` spreads the suite over its pytest-xdist workers (``--dist loadgroup``).

Every worker starts the brokers, clusters and Spark sessions its tests ask for. Left to file
order, several workers each start their own copy of the same 3-node cluster or Spark session,
and each copy then idles until its worker ends, on a two-core machine. Here:

- the files that use one of ``SHARED`` (session resources that take one JVM or more) form one
  group with every other file using it, so one worker starts it once;
- any other file is a group of its own (its module fixtures stay on one worker), except the
  files of ``SPLIT``, each of whose tests is a group (they share no fixture worth keeping);
- groups of ``SPLIT`` run first and the shared groups next: the longest work starts first;
- after the last test of a group, its worker stops the ``SHARED`` resources the next group
  does not use (pytest would keep them, idle, until the worker ends).

The workers compute the groups from their collected items (which fixtures each test uses) and
write them to a folder the controller names; the controller's scheduler (pytest-xdist's
load-scope scheduling, with these groups as scopes) reads them. pytest-xdist's own
``xdist_group`` marks are not used: they rename node ids, which pytest 9 no longer allows.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

#: Session fixtures that start JVMs (brokers, an OAuth server, a Spark session).
SHARED = ("spark", "apache_cluster_session", "apache_rack_cluster_session",
          "apache_share_kafka", "oidc_kafka", "mock_oauth2", "matrix_kafka")
#: Files whose tests are each a group of their own, started first: one wheel test per Python.
SPLIT = ("tests/distribution/test_wheels.py",)


def _file(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


def _unit(item: pytest.Item) -> str:
    """What stays on one worker at the least: the test's file, or the test (``SPLIT``)."""
    return item.nodeid if _file(item) in SPLIT else _file(item)


def _shared(item: pytest.Item) -> set[str]:
    return set(getattr(item, "fixturenames", ())) & set(SHARED)


def groups(items: list[pytest.Item]) -> dict[str, str]:
    """Unit -> group name: units sharing a ``SHARED`` fixture are one group (transitively),
    named by those fixtures; any other unit is its own group."""
    parent: dict[str, str] = {}

    def find(key: str) -> str:
        while parent.setdefault(key, key) != key:
            key = parent[key]
        return key

    for item in items:
        for name in _shared(item):
            parent[find(f"fixture:{name}")] = find(_unit(item))
    names: dict[str, list[str]] = {}
    for key in list(parent):
        if key.startswith("fixture:"):
            names.setdefault(find(key), []).append(key.split(":", 1)[1])
    return {_unit(item): "+".join(sorted(names[find(_unit(item))]))
            if find(_unit(item)) in names else _unit(item) for item in items}


class _Plan:
    """This process's groups, the shared fixtures each uses, and those it has started."""

    def __init__(self) -> None:
        self.group: dict[str, str] = {}
        self.fixtures: dict[str, set[str]] = {}
        self.started: dict[str, list] = {}


_PLAN = _Plan()


#: ``workerinput`` key naming the folder where workers write their groups
FOLDER_KEY = "kafka_fast_test_groups"


def _grouping(config: pytest.Config) -> bool:
    # pytest-xdist workers run with dist "no" and its own loadgroup flag
    return bool(config.getoption("loadgroup", False)
                or config.getoption("dist", "no") == "loadgroup")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Group and order the items; a worker writes the groups for the controller."""
    if not _grouping(config):
        return
    _PLAN.group.update(groups(items))
    for item in items:
        _PLAN.fixtures.setdefault(_PLAN.group[_unit(item)], set()).update(_shared(item))
    order = {g: i for i, g in enumerate(dict.fromkeys(_PLAN.group[_unit(i)] for i in items))}

    def rank(item: pytest.Item) -> tuple[int, int]:
        group = _PLAN.group[_unit(item)]
        first = 0 if _file(item) in SPLIT else 1 if _PLAN.fixtures[group] else 2
        return first, order[group]

    items.sort(key=rank)
    folder = getattr(config, "workerinput", {}).get(FOLDER_KEY)
    if folder:
        worker = config.workerinput.get("workerid", "gw")  # type: ignore[attr-defined]
        path = Path(folder) / f"{worker}.json"
        path.with_suffix(".tmp").write_text(json.dumps(
            {item.nodeid: _PLAN.group[_unit(item)] for item in items}))
        os.replace(path.with_suffix(".tmp"), path)


class _Folder:
    """Where this run's workers write their groups (made by the controller)."""

    path: str | None = None

    @classmethod
    def made(cls, config: pytest.Config) -> str:
        if cls.path is None:
            cls.path = tempfile.mkdtemp(prefix="kafka_fast-test-groups-")
            folder = cls.path
            config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))
        return cls.path


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """On the controller, for ``--dist loadgroup``: load-scope scheduling by these groups."""
    if config.getoption("dist", "no") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    folder = _Folder.made(config)

    class GroupScheduling(LoadScopeScheduling):
        """Scopes are the workers' groups (a test no worker grouped: its file)."""

        def __init__(self) -> None:
            super().__init__(config, log)
            self._groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self._groups is None:
                written = sorted(Path(folder).glob("*.json"))
                self._groups = json.loads(written[0].read_text()) if written else {}
            return self._groups.get(nodeid) or nodeid.split("::", 1)[0]

    return GroupScheduling()


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    """Tell each worker where to write its groups."""
    if node.config.getoption("dist", "no") == "loadgroup":
        node.workerinput[FOLDER_KEY] = _Folder.made(node.config)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None):
    """After the last test of a group, stop the ``SHARED`` fixtures the next group does not
    use (at the end of the session pytest stops the rest as usual)."""
    yield
    if not _PLAN.group:
        return
    for name in _shared(item):
        for fixturedef in item._fixtureinfo.name2fixturedefs.get(name, ()):
            if fixturedef.scope == "session" and fixturedef not in _PLAN.started.get(name, []):
                _PLAN.started.setdefault(name, []).append(fixturedef)
    group = _PLAN.group.get(_unit(item))
    if nextitem is None or _PLAN.group.get(_unit(nextitem)) == group:
        return
    wanted = _PLAN.fixtures.get(_PLAN.group.get(_unit(nextitem), ""), set())
    for name in set(_PLAN.started) - wanted:
        for fixturedef in _PLAN.started.pop(name):
            fixturedef.finish(item._request)


#: Environment variable naming a file to which each test's phases are appended as JSON lines
#: (node id, worker, phase, start and stop in seconds since the epoch, and the machine's
#: cumulative busy and total CPU time from /proc/stat when the phase was reported): the run's
#: timeline, which shows where the run waits and whether the CPUs were saturated meanwhile.
TIMELINE_ENV = "KAFKA_FAST_TEST_TIMELINE"


def _machine_cpu() -> tuple[int, int]:
    """(busy, total) CPU ticks of the whole machine so far (zeros without /proc/stat)."""
    try:
        with open("/proc/stat") as stat:
            ticks = [int(v) for v in stat.readline().split()[1:]]
    except (OSError, ValueError):
        return 0, 0
    idle = sum(ticks[3:5])  # idle and iowait
    return sum(ticks) - idle, sum(ticks)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Append the phase to the timeline file, on the controller (or a run without workers)."""
    path = os.environ.get(TIMELINE_ENV)
    if not path or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    node = getattr(report, "node", None)
    worker = node.gateway.id if node is not None else "main"
    busy, total = _machine_cpu()
    with open(path, "a") as out:
        out.write(json.dumps({"test": report.nodeid, "worker": worker, "phase": report.when,
                              "start": report.start, "stop": report.stop,
                              "outcome": report.outcome, "cpu_busy": busy,
                              "cpu_total": total}) + "\n")
