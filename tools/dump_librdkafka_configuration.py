"""Write librdkafka's CONFIGURATION.md for the librdkafka the tests pin (the one inside the
installed confluent-kafka wheel), exactly as librdkafka's Makefile makes it: a title line,
then ``rd_kafka_conf_properties_show()`` with ``||`` escaped.

Usage: python tools/dump_librdkafka_configuration.py [OUTPUT]
(default tools/data/librdkafka-<version>-CONFIGURATION.md). tools/gen_librdkafka_keys.py
reads the stored file; this only refreshes it when the pinned version changes.
"""

from __future__ import annotations

import ctypes
import glob
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def librdkafka() -> ctypes.CDLL:
    """The librdkafka shared library bundled with confluent-kafka."""
    import confluent_kafka

    base = os.path.dirname(confluent_kafka.__file__)
    found = sorted(glob.glob(os.path.join(base, "..", "confluent_kafka.libs", "librdkafka*")))
    if not found:
        raise SystemExit("no librdkafka found next to confluent_kafka (a wheel install)")
    return ctypes.CDLL(found[0])


def configuration_md(lib: ctypes.CDLL) -> str:
    libc = ctypes.CDLL(None)
    libc.fopen.restype = ctypes.c_void_p
    libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    libc.fclose.argtypes = [ctypes.c_void_p]
    lib.rd_kafka_conf_properties_show.argtypes = [ctypes.c_void_p]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "list.md")
        fp = libc.fopen(path.encode(), b"w")
        lib.rd_kafka_conf_properties_show(fp)
        libc.fclose(fp)
        with open(path, encoding="utf-8") as fh:
            shown = fh.read()
    return "# Configuration properties\n" + shown.replace("||", "\\|\\|")


def main(argv: list[str]) -> int:
    lib = librdkafka()
    lib.rd_kafka_version_str.restype = ctypes.c_char_p
    version = lib.rd_kafka_version_str().decode()
    out = argv[0] if argv else os.path.join(HERE, "data", f"librdkafka-{version}-CONFIGURATION.md")
    with open(out, "w", encoding="utf-8") as fh:
        fh.write(configuration_md(lib))
    print(f"wrote {out} (librdkafka {version})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
