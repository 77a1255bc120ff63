"""Without root or a system peer the suite still runs: tools/install_system_deps.sh lists what is
missing and succeeds, and each test needing a missing peer skips with one line naming what to
install; under CI=true both fail instead."""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "install_system_deps.sh"


@pytest.fixture
def bare_bin():
    """A directory of the few commands the script uses (no kcat, socat, java, cross tools,
    apt-get or sudo), readable by any user."""
    path = Path(tempfile.mkdtemp(prefix="bare-bin-"))
    path.chmod(0o755)
    for name in ("bash", "id", "sed", "tr"):
        os.symlink(shutil.which(name), path / name)
    yield path
    shutil.rmtree(path)


def _as_unprivileged() -> list[str]:
    """Run as nobody when the tests run as root (so the no-root path is the one taken)."""
    if os.getuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv (util-linux) to drop privileges")
    return [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]


def _run_script(bare_bin: Path, ci: str | None) -> subprocess.CompletedProcess:
    env = {"PATH": str(bare_bin)}
    if ci is not None:
        env["CI"] = ci
    return subprocess.run([*_as_unprivileged(), str(bare_bin / "bash"), str(SCRIPT)],
                          env=env, cwd="/", capture_output=True, text=True, timeout=60)


def _missing_system_peers() -> list[str]:
    """The script's peers that a PATH of ``bare_bin`` lacks, in its order: commands are looked
    for on PATH and in /usr/sbin (the KDC), Cyrus SASL's GSSAPI module in the library dirs."""
    kdc = [] if os.access("/usr/sbin/krb5kdc", os.X_OK) else ["krb5kdc"]
    module = [] if glob.glob("/usr/lib/*/sasl2/libgssapiv2.so*") else ["sasl2-gssapi"]
    # OpenSSL's headers and gcc (the test engine): gcc is never on the bare PATH
    return ["kcat", "socat", *kdc, "krb5-config", *module, "openssl-dev", "perf"]


def test_install_script_without_root_lists_each_missing_peer_and_succeeds(bare_bin):
    done = _run_script(bare_bin, None)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    missing = [line.split()[2] for line in lines if line.startswith("install_system_deps: missing")]
    assert missing == [*_missing_system_peers(), "java", "mvn"]
    optional = [line.split()[2] for line in lines
                if line.startswith("install_system_deps: optional")]
    assert optional == ["aarch64-linux-gnu-gcc", "qemu-aarch64"]
    assert "kcat interop tests will skip" in done.stdout


def test_install_script_under_ci_fails_when_peers_stay_missing(bare_bin):
    done = _run_script(bare_bin, "true")
    assert done.returncode == 1
    missing = " ".join([*_missing_system_peers(), "aarch64-linux-gnu-gcc", "qemu-aarch64"])
    assert f"CI=true and still missing: {missing}" in done.stderr
    assert "kcat interop tests will fail" in done.stdout


def _pytest_without_peers(test_id: str, ci: str | None, bare_bin: Path) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "CI")}
    env["PATH"] = str(bare_bin)
    env["PYTHONPATH"] = str(ROOT)
    if ci is not None:
        env["CI"] = ci
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
                           test_id], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    return done.stdout + done.stderr


SPARK_TEST = "tests/spark/test_spark_kafka.py::test_unreachable_broker_fails_the_job_with_the_delivery_error"
ARM_TEST = "tests/core/test_crc32c.py::test_armv8_path_under_emulation"


@pytest.mark.parametrize(("test_id", "line"), [
    (SPARK_TEST, "java not found: install Java 17"),
    (ARM_TEST, "aarch64-linux-gnu-gcc not found: install Debian packages gcc-aarch64-linux-gnu"),
], ids=["spark-without-java", "arm-without-cross-compiler"])
def test_a_test_whose_peer_is_missing_skips_with_one_line(test_id, line, bare_bin):
    out = _pytest_without_peers(test_id, None, bare_bin)
    assert re.search(r"^1 skipped in ", out, re.M), out[-3000:]
    assert line in out


@pytest.mark.parametrize("test_id", [SPARK_TEST, ARM_TEST], ids=["spark", "arm"])
def test_under_ci_a_missing_peer_fails_the_test(test_id, bare_bin):
    out = _pytest_without_peers(test_id, "true", bare_bin)
    assert re.search(r"^1 (failed|error) in ", out, re.M), out[-3000:]
    assert "CI=true: missing peers fail" in out
