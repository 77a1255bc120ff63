"""CRC32C on every compiled path this CPU supports and on the pure-Python twin.

Oracles: RFC 3720 appendix B.4 vectors, the "123456789" check value, google-crc32c, and the
pure twin (slicing-by-8, independent of the compiled kernels).
"""

from __future__ import annotations

import array
import importlib
import os
import platform
import random
import subprocess
import sys
import threading

import google_crc32c
import numpy as np
import pytest
from harness.peers import require_tool

import kafka_fast

NATIVE = importlib.import_module("kafka_fast._native._crc32c")
PURE = importlib.import_module("kafka_fast._pure.crc32c")
NATIVE_PATHS = NATIVE.available_impls()
ALL_PATHS = ("vpclmul-avx512", "vpclmul-avx2", "pclmul-fold", "sse4.2-3way", "armv8", "slicing-by-8")

IMPLS = [pytest.param((NATIVE, path), id=f"native-{path}") for path in NATIVE_PATHS]
IMPLS.append(pytest.param((PURE, "python"), id="pure"))


@pytest.fixture(params=IMPLS)
def impl(request):
    """(module, crc32c function) with the module switched to one path for this test."""
    module, path = request.param
    module.use_impl(path)
    assert module.crc32c_impl() == path
    yield module, module.crc32c
    module.use_impl(None)


def oracle(data: bytes, value: int = 0) -> int:
    return google_crc32c.extend(value, data) if value else google_crc32c.value(data)


RNG = random.Random(20240611)
BUF = RNG.randbytes(4096 + 64)
BIG = RNG.randbytes((8 << 20) + 64)


@pytest.fixture(scope="module")
def pure_by_length():
    """Pure-twin CRC of BUF[:n] for n in 0..4096, computed once."""
    return [PURE.crc32c(BUF[:n]) for n in range(4097)]


# --- published vectors ------------------------------------------------------------------------

RFC3720 = [
    (bytes(32), 0x8A9136AA),
    (b"\xff" * 32, 0x62A8AB43),
    (bytes(range(32)), 0x46DD794E),
    (bytes(range(31, -1, -1)), 0x113FDB5C),
    (b"123456789", 0xE3069283),
    (b"", 0),
]


@pytest.mark.parametrize("data,expected", RFC3720, ids=["zeros", "ones", "inc", "dec", "check", "empty"])
def test_published_vectors(impl, data, expected):
    _, crc32c = impl
    assert crc32c(data) == expected


def test_iscsi_read_pdu_vector(impl):
    # RFC 3720 B.4: an iSCSI SCSI Read (10) command PDU, 48 bytes.
    pdu = bytes.fromhex(
        "01c00000 00000000 00000000 00000000 14000000 00000400 00000014 00000018"
        "28000000 00000000 02000000 00000000"
    )
    _, crc32c = impl
    assert crc32c(pdu) == 0xD9963A56


# --- against google-crc32c and the pure twin --------------------------------------------------


def test_every_length_up_to_4096(impl, pure_by_length):
    _, crc32c = impl
    mismatches = [n for n in range(4097) if crc32c(BUF[:n]) != pure_by_length[n]]
    assert mismatches == []
    assert pure_by_length[4096] == oracle(BUF[:4096])
    assert all(pure_by_length[n] == oracle(BUF[:n]) for n in range(0, 4097, 61))


@pytest.mark.parametrize("offset", range(16))
def test_unaligned_starts(impl, offset):
    _, crc32c = impl
    view = memoryview(BUF)
    for n in (1, 7, 8, 15, 16, 17, 63, 64, 65, 127, 128, 129, 255, 256, 257, 511, 1000, 4000):
        assert crc32c(view[offset : offset + n]) == oracle(BUF[offset : offset + n]), n


# Sizes around the kernels' internal thresholds: lanes of 64/512/4096 bytes (three of them per
# block), folding blocks of 64/256 bytes, the 512-byte start of 256-bit folding, the 8192-byte
# alignment prologue, the 28672-byte blocks of folding with crc32 lanes alongside.
BOUNDARY_SIZES = [191, 192, 193, 511, 512, 513, 1535, 1536, 1537, 8191, 8192, 8193, 12287,
                  12288, 12289, 12288 + 1536 + 192 + 7, 24576 + 255, 28671, 28672, 28673,
                  2 * 28672 + 300, 65536, 65536 + 1]


@pytest.mark.parametrize("offset", [0, 1, 8, 13, 16, 32, 48, 63])
def test_block_boundaries(impl, offset):
    module, crc32c = impl
    sizes = BOUNDARY_SIZES if module is NATIVE else [n for n in BOUNDARY_SIZES if n < 16384]
    for n in sizes:
        data = BIG[offset : offset + n]
        assert crc32c(data) == oracle(data), n


def test_continuation(impl):
    _, crc32c = impl
    data = BIG[: 20000 if impl[0] is PURE else 200000]
    whole = oracle(data)
    for cut in (0, 1, 3, 8, 63, 64, 100, 255, 256, 4095, 8193, 12289, len(data) // 2, len(data)):
        cut = min(cut, len(data))
        assert crc32c(data[cut:], crc32c(data[:cut])) == whole, cut
    # many small pieces
    crc, pos = 0, 0
    while pos < len(data):
        step = RNG.randrange(1, 700)
        crc = crc32c(data[pos : pos + step], crc)
        pos += step
    assert crc == whole


def test_continue_from_value_matches_google(impl):
    _, crc32c = impl
    for value in (1, 0xDEADBEEF, 0xFFFFFFFF, 0x80000000):
        for n in (0, 5, 100, 1000):
            assert crc32c(BUF[:n], value) == oracle(BUF[:n], value)


@pytest.mark.parametrize("size", [1 << 20, (1 << 20) + 3, (3 << 20) - 17, 8 << 20])
def test_large_random_buffers(impl, size):
    module, crc32c = impl
    if module is PURE and size > (1 << 20):
        size = 100_003  # the pure twin is slow; large inputs belong to the compiled paths
    offset = size % 64
    data = BIG[offset : offset + size]
    assert crc32c(data) == oracle(data)
    assert crc32c(memoryview(BIG)[offset : offset + size]) == oracle(data)


# --- input types --------------------------------------------------------------------------------


def test_buffer_types(impl):
    _, crc32c = impl
    raw = BUF[:1000]
    expected = oracle(raw)
    assert crc32c(raw) == expected
    assert crc32c(bytearray(raw)) == expected
    assert crc32c(memoryview(raw)) == expected
    assert crc32c(memoryview(bytearray(b"xx" + raw + b"yy"))[2:-2]) == expected
    assert crc32c(np.frombuffer(raw, dtype=np.uint8)) == expected
    assert crc32c(np.frombuffer(raw, dtype=np.uint8)[10:]) == oracle(raw[10:])
    assert crc32c(np.frombuffer(raw, dtype=np.int64)) == expected  # raw bytes, any dtype
    assert crc32c(np.frombuffer(raw, dtype=np.uint8).reshape(10, 100)) == expected
    assert crc32c(array.array("B", raw)) == expected
    assert crc32c(memoryview(raw).cast("I")) == expected
    big = BIG[: 1 << 16]  # above the size where the compiled module releases the GIL
    assert crc32c(bytearray(big)) == oracle(big)
    assert crc32c(np.frombuffer(big, dtype=np.uint8)) == oracle(big)


NOT_CONTIGUOUS = [
    pytest.param(memoryview(BUF)[::2], id="memoryview-step"),
    pytest.param(np.frombuffer(BUF, dtype=np.uint8)[::3], id="numpy-step"),
    pytest.param(np.asfortranarray(np.arange(12, dtype=np.uint8).reshape(3, 4)), id="numpy-fortran"),
]
NOT_BUFFERS = [
    pytest.param("123456789", id="str"),
    pytest.param(12345, id="int"),
    pytest.param(None, id="None"),
    pytest.param([1, 2, 3], id="list"),
]


@pytest.mark.parametrize("data", NOT_CONTIGUOUS + NOT_BUFFERS)
def test_bad_data_raises_type_error(impl, data):
    _, crc32c = impl
    with pytest.raises(TypeError, match=r"crc32c\(\) data must be a C-contiguous bytes-like object") as info:
        crc32c(data)
    assert type(data).__name__ in str(info.value)


@pytest.mark.parametrize("data", NOT_CONTIGUOUS)
def test_non_contiguous_message_says_why(impl, data):
    _, crc32c = impl
    with pytest.raises(TypeError, match="not C-contiguous"):
        crc32c(data)


def test_bad_value(impl):
    _, crc32c = impl
    for value in (-1, 1 << 32, 1 << 70):
        with pytest.raises(ValueError, match=r"value must be in 0\.\.0xFFFFFFFF"):
            crc32c(b"abc", value)
    for value in (1.5, "1", None):
        with pytest.raises(TypeError, match=r"value must be an int"):
            crc32c(b"abc", value)
    assert crc32c(b"abc", np.uint32(7)) == oracle(b"abc", 7)


# --- path selection -----------------------------------------------------------------------------


def test_available_paths_follow_cpu():
    assert NATIVE_PATHS[-1] == "slicing-by-8"
    assert set(NATIVE_PATHS) <= set(ALL_PATHS)
    assert NATIVE.crc32c_impl() == NATIVE_PATHS[0]
    if platform.machine() in ("x86_64", "AMD64") and os.path.exists("/proc/cpuinfo"):
        with open("/proc/cpuinfo") as f:
            flags = next(line for line in f if line.startswith("flags")).split()
        has = set(flags).__contains__
        expected = [
            name
            for name, needs in (
                ("vpclmul-avx512", has("sse4_2") and has("pclmulqdq") and has("avx")
                 and has("vpclmulqdq") and has("avx512f")),
                ("vpclmul-avx2", has("sse4_2") and has("pclmulqdq") and has("avx")
                 and has("vpclmulqdq") and has("avx2")),
                ("pclmul-fold", has("sse4_2") and has("pclmulqdq")),
                ("sse4.2-3way", has("sse4_2")),
                ("slicing-by-8", True),
            )
            if needs
        ]
        assert list(NATIVE_PATHS) == expected


def test_use_impl_rejects_unavailable_path():
    missing = [p for p in ALL_PATHS if p not in NATIVE_PATHS] + ["no-such-path"]
    for name in missing:
        with pytest.raises(ValueError, match="not available") as info:
            NATIVE.use_impl(name)
        assert "slicing-by-8" in str(info.value)
    assert NATIVE.crc32c_impl() == NATIVE_PATHS[0]
    with pytest.raises(ValueError, match="not available"):
        PURE.use_impl("sse4.2-3way")
    assert PURE.crc32c_impl() == "python"


def _run(code: str, **env: str) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("KAFKA_FAST_")}
    full_env.update(env)
    return subprocess.run(
        [sys.executable, "-W", "always", "-c", code],
        env=full_env, capture_output=True, text=True, timeout=60, check=True,
    )


CHILD = (
    "from kafka_fast._native import _crc32c as m; "
    "print(m.crc32c_impl(), m.crc32c(bytes(range(256)) * 40 + b'123456789'))"
)


@pytest.mark.parametrize("path", NATIVE_PATHS)
def test_env_var_forces_path(path):
    expected = oracle(bytes(range(256)) * 40 + b"123456789")
    out = _run(CHILD, KAFKA_FAST_CRC32C_IMPL=path)
    assert out.stdout.split() == [path, str(expected)]
    assert "RuntimeWarning" not in out.stderr


def test_env_var_unavailable_path_warns_and_uses_best():
    expected = oracle(bytes(range(256)) * 40 + b"123456789")
    out = _run(CHILD, KAFKA_FAST_CRC32C_IMPL="no-such-path")
    assert out.stdout.split() == [NATIVE_PATHS[0], str(expected)]
    assert "KAFKA_FAST_CRC32C_IMPL='no-such-path' is not available" in out.stderr


def test_public_module_selects_native_or_pure():
    code = "import kafka_fast; print(kafka_fast.crc32c_impl(), kafka_fast.crc32c(b'123456789'))"
    assert _run(code).stdout.split() == [NATIVE_PATHS[0], str(0xE3069283)]
    pure = _run(code, KAFKA_FAST_NO_EXTENSIONS="1")
    assert pure.stdout.split() == ["python", str(0xE3069283)]


def test_threads_share_the_kernel():
    pieces = [BIG[i << 20 : (i + 1) << 20] for i in range(4)]
    expected = [oracle(p) for p in pieces]
    results: dict[int, list[int]] = {}

    def work(i: int) -> None:
        results[i] = [NATIVE.crc32c(pieces[i]) for _ in range(5)]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert {i: r for i, r in results.items()} == {i: [expected[i]] * 5 for i in range(4)}


# --- aarch64 kernel, cross-compiled and run under user-mode emulation -------------------------

ARM_HARNESS = r"""
#include "crc32c.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t bitwise(uint32_t crc, const uint8_t *p, size_t n) {
    crc = ~crc;
    while (n--) {
        crc ^= *p++;
        for (int k = 0; k < 8; k++) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
    }
    return ~crc;
}

int main(void) {
    static uint8_t buf[70000];
    uint8_t v[32];
    const char *names[8];
    size_t count = kf_crc32c_impls(names, 8);
    int fails = 0;
    srand(7);
    for (size_t i = 0; i < sizeof buf; i++) buf[i] = (uint8_t)rand();
    for (size_t t = 0; t < count; t++) {
        if (kf_crc32c_select(names[t]) != 0 || strcmp(kf_crc32c_impl(), names[t]) != 0) return 2;
        for (int i = 0; i < 32; i++) v[i] = (uint8_t)i;
        fails += kf_crc32c(0, v, 32) != 0x46DD794Eu;
        fails += kf_crc32c(0, "123456789", 9) != 0xE3069283u;
        for (size_t off = 0; off < 8; off++)
            for (size_t n = 0; n <= 2000; n += 1 + off)
                fails += kf_crc32c((uint32_t)n, buf + off, n) != bitwise((uint32_t)n, buf + off, n);
        size_t big = sizeof buf - 9;
        fails += kf_crc32c(5, buf + 9, big) != bitwise(5, buf + 9, big);
        fails += kf_crc32c(kf_crc32c(5, buf + 9, 777), buf + 786, big - 777) != bitwise(5, buf + 9, big);
        printf("%s\n", names[t]);
    }
    printf("fails=%d\n", fails);
    return fails != 0;
}
"""


def test_armv8_path_under_emulation(tmp_path):
    """The ARMv8 CRC32C kernel, which x86 machines cannot run natively: cross-compiled and
    run under qemu. Optional peers: skipped (one line) without them, except under CI=true."""
    cross_cc = require_tool("aarch64-linux-gnu-gcc")
    qemu = require_tool("qemu-aarch64")
    csrc = os.path.join(os.path.dirname(kafka_fast.__file__), "_native", "csrc")
    source = tmp_path / "harness.c"
    source.write_text(ARM_HARNESS)
    exe = tmp_path / "harness"
    subprocess.run(
        [cross_cc, "-O3", "-Wall", "-Wextra", "-Werror", "-static", f"-I{csrc}", str(source),
         os.path.join(csrc, "crc32c.c"), "-o", str(exe), "-lpthread"],
        check=True, capture_output=True, timeout=120,
    )
    out = subprocess.run([qemu, "-cpu", "max", str(exe)], capture_output=True, text=True,
                         timeout=120)
    assert out.stdout.split() == ["armv8", "slicing-by-8", "fails=0"], out.stdout + out.stderr
    assert out.returncode == 0
