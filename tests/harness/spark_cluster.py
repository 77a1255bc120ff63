"""A Spark standalone cluster on 127.0.0.1: one master and N workers, run from the PySpark
installation's own ``spark-class`` (``org.apache.spark.deploy.master.Master`` and
``org.apache.spark.deploy.worker.Worker``).

Each worker offers 1 core and 1 GB; the daemons' own JVMs get 256 MB and the client compiler
only (``harness.jvm_start``; an application's drivers and executors get it from
``jvm_start.spark_submit_args()``). Every start-up wait
is bounded; ``stop()`` kills every JVM (a worker's process group holds the executors and
the Python workers it started) and removes the work directories. The daemons start with an
environment stripped of ``PYTHONPATH`` and ``PYSPARK_*``: whatever an application's
executors need has to come from the application's own configuration.

    cluster = SparkCluster.start(tmp_dir, workers=2)
    cluster.master_url            # spark://127.0.0.1:PORT
    cluster.kill_worker(0)        # SIGKILL: the worker JVM, its executors, their Python
    cluster.restart_worker(0)
    cluster.stop()
"""

from __future__ import annotations

import os
import shutil
import signal
import time
from pathlib import Path

from harness.jvm_start import QUICK_JVM
from harness.ports import LOOPBACK, free_port, wait_listening
from harness.process import ManagedProcess

WORKER_CORES = 1
WORKER_MEMORY = "1g"
DAEMON_MEMORY = "256m"
START_TIMEOUT = 180.0  # a loaded 2-core machine takes a while
_STRIPPED = ("PYTHONPATH", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "PYSPARK_SUBMIT_ARGS",
             "SPARK_CONF_DIR", "SPARK_HOME")


def spark_home() -> Path:
    """The PySpark installation (it ships ``bin/spark-class`` and Spark's jars)."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def _clean_env() -> list[str]:
    """``env -u NAME ...``: ManagedProcess starts from this process's environment, and the
    daemons must not inherit these names from it (``env`` execs, so the PID stays)."""
    argv = ["env"]
    for name in _STRIPPED:
        if name not in ("SPARK_CONF_DIR", "SPARK_HOME"):
            argv += ["-u", name]
    return argv


class SparkCluster:
    """A running master and its workers (see the module docstring)."""

    def __init__(self, root: Path, master: ManagedProcess, master_port: int,
                 env: dict[str, str]) -> None:
        self.root = root
        self.master = master
        self.master_url = f"spark://{LOOPBACK}:{master_port}"
        self.env = env
        self.workers: list[ManagedProcess | None] = []
        self._starts = 0

    @classmethod
    def start(cls, root: Path, workers: int = 2) -> SparkCluster:
        root = Path(root)
        conf_dir = root / "conf"  # empty: no user spark-defaults.conf or log settings
        conf_dir.mkdir(parents=True, exist_ok=True)
        home = spark_home()
        env = {k: v for k, v in os.environ.items() if k not in _STRIPPED}
        env.update(SPARK_HOME=str(home), SPARK_CONF_DIR=str(conf_dir), SPARK_LOCAL_IP=LOOPBACK,
                   SPARK_DAEMON_MEMORY=DAEMON_MEMORY, SPARK_DAEMON_JAVA_OPTS=QUICK_JVM,
                   SPARK_LOG_DIR=str(root / "logs"),
                   SPARK_NO_DAEMONIZE="1")
        port, ui = free_port(), free_port()
        master = ManagedProcess(
            [*_clean_env(), str(home / "bin" / "spark-class"),
             "org.apache.spark.deploy.master.Master",
             "--host", LOOPBACK, "--port", str(port), "--webui-port", str(ui)],
            root / "master.log", env=env, stdin=None)
        cluster = cls(root, master, port, env)
        try:
            wait_listening(port, START_TIMEOUT, master.alive)
            for _ in range(workers):
                cluster.workers.append(cluster._start_worker())
            for index in range(workers):
                cluster.wait_registered(index)
        except BaseException:
            cluster.stop()
            raise
        return cluster

    def _start_worker(self) -> ManagedProcess:
        self._starts += 1
        work = self.root / f"work-{self._starts}"
        work.mkdir(parents=True, exist_ok=True)
        home = Path(self.env["SPARK_HOME"])
        return ManagedProcess(
            [*_clean_env(), str(home / "bin" / "spark-class"),
             "org.apache.spark.deploy.worker.Worker",
             "--host", LOOPBACK, "--webui-port", str(free_port()),
             "--cores", str(WORKER_CORES), "--memory", WORKER_MEMORY,
             "--work-dir", str(work), self.master_url],
            self.root / f"worker-{self._starts}.log", env=self.env, stdin=None)

    def wait_registered(self, index: int, timeout: float = START_TIMEOUT) -> None:
        """Wait until worker ``index`` says the master accepted it."""
        proc = self.workers[index]
        assert proc is not None
        deadline = time.monotonic() + timeout
        while "Successfully registered with master" not in proc.log_tail(200_000):
            if not proc.alive():
                raise RuntimeError(f"Spark worker exited:\n{proc.log_tail()}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"Spark worker not registered after {timeout} s:\n"
                                   f"{proc.log_tail()}")
            time.sleep(0.2)

    def worker_pids(self, index: int) -> list[int]:
        """Every live process of worker ``index``'s session (the worker JVM, its executors'
        JVMs and their Python workers, which make process groups of their own)."""
        proc = self.workers[index]
        if proc is None:
            return []
        pids = []
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    if os.getsid(int(entry)) == proc.pid:
                        pids.append(int(entry))
                except ProcessLookupError:
                    pass
        return pids

    def executor_dirs(self, index: int) -> list[Path]:
        """The executor directories (``app-*/<executor id>``) worker ``index`` has made."""
        proc = self.workers[index]
        if proc is None:
            return []
        work = Path(proc.argv[proc.argv.index("--work-dir") + 1])
        return sorted(p for p in work.glob("app-*/*") if p.is_dir())

    def kill_worker(self, index: int) -> None:
        """SIGKILL every process of worker ``index``'s session at once (the worker JVM, its
        executors, their Python workers), as a machine failure would."""
        proc = self.workers[index]
        assert proc is not None
        for pid in self.worker_pids(index):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.popen.wait(30)
        proc.stop(grace=1.0)
        self.workers[index] = None

    def restart_worker(self, index: int) -> None:
        """Start a new worker in slot ``index`` and wait until it is registered."""
        assert self.workers[index] is None
        self.workers[index] = self._start_worker()
        self.wait_registered(index)

    def logs(self, limit: int = 4000) -> str:
        parts = [f"--- master\n{self.master.log_tail(limit)}"]
        for i, w in enumerate(self.workers):
            if w is not None:
                parts.append(f"--- worker {i}\n{w.log_tail(limit)}")
        return "\n".join(parts)

    def stop(self) -> None:
        """Kill every JVM of the cluster and remove its directories."""
        for proc in self.workers:
            if proc is not None:
                proc.stop(grace=3.0)
        self.workers = [None] * len(self.workers)
        self.master.stop(grace=3.0)
        shutil.rmtree(self.root, ignore_errors=True)
