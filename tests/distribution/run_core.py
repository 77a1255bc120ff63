"""Run pytest with the arguments given, then print one JSON line: this interpreter's version,
whether the compiled engine served, and every loaded ``kafka_fast`` module whose file is not
under ``sys.prefix`` (an installed wheel has none; the checkout's sources would show here).

Run by the Python of a wheel's virtualenv from outside the checkout (tests/distribution)."""

from __future__ import annotations

import json
import os
import sys

import pytest


def main() -> int:
    code = int(pytest.main(sys.argv[1:]))
    import kafka_fast.records

    prefix = os.path.realpath(sys.prefix) + os.sep
    outside = sorted(name for name, module in list(sys.modules.items())
                     if (name == "kafka_fast" or name.startswith("kafka_fast."))
                     and getattr(module, "__file__", None)
                     and not os.path.realpath(module.__file__).startswith(prefix))
    print(json.dumps({"python": "{}.{}".format(*sys.version_info[:2]),
                      "native": kafka_fast.records.NATIVE,
                      "package": kafka_fast.__file__, "outside": outside}))
    return code


if __name__ == "__main__":
    sys.exit(main())
