"""The harness's Apache Kafka nodes in a test session start with HotSpot's client compiler and
a class-data archive trained once per java binary and classpath (harness.jvm_start), and
the archive is trained once however many workers ask for it."""

from __future__ import annotations

import threading
from pathlib import Path

from harness import jvm_start


def test_a_session_node_runs_with_the_client_compiler_and_maps_the_archive(apache_kafka):
    (node,) = apache_kafka.nodes.values()
    argv = Path(f"/proc/{node.pid}/cmdline").read_bytes().decode().split("\0")
    assert set(jvm_start.QUICK_OPTIONS) <= set(argv)
    (archive,) = [a.split("=", 1)[1] for a in argv if a.startswith("-XX:SharedArchiveFile=")]
    assert Path(archive).stat().st_size > 1 << 20
    # HotSpot maps an archive it accepted; one that does not match the classpath is
    # refused with a [cds] warning in the JVM's output (the node's log).
    assert archive in Path(f"/proc/{node.pid}/maps").read_text()
    assert "[cds]" not in node.log_tail(1 << 20)


def test_the_archive_is_trained_once_for_concurrent_callers(tmp_path):
    libs = tmp_path / "kafka-9.9.9" / "libs"
    libs.mkdir(parents=True)
    (libs / "a.jar").write_bytes(b"jar")
    trained: list[Path] = []

    def train(path: Path) -> None:
        trained.append(path)
        path.write_bytes(b"archive")

    found: list[Path | None] = []
    threads = [threading.Thread(target=lambda: found.append(jvm_start.archive_for(
        "/bin/sh", libs, tmp_path / "archives", train))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(trained) == 1 and not trained[0].exists()  # renamed into place
    assert len(set(found)) == 1 and found[0] is not None
    assert found[0].read_bytes() == b"archive" and found[0].name.startswith("kafka-9.9.9-")
    # a jar that changed makes another archive (the old one would be refused)
    (libs / "a.jar").write_bytes(b"jar, changed")
    again = jvm_start.archive_for("/bin/sh", libs, tmp_path / "archives", train)
    assert again is not None and again != found[0] and len(trained) == 2


def test_no_archive_when_training_writes_none(tmp_path):
    libs = tmp_path / "libs"
    libs.mkdir()
    assert jvm_start.archive_for("/bin/sh", libs, tmp_path / "archives",
                                     lambda path: None) is None
    assert not list((tmp_path / "archives").glob("*.jsa"))
