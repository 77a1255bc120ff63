"""Generate docs/librdkafka-keys.md: every property of librdkafka's CONFIGURATION.md (the
version the tests pin, stored in tools/data/) and what kafka_fast does with it: implemented
(with the tests that name it), mapped to another key, accepted with a warning that it does
nothing here, refused as confluent-kafka refuses it, or refused with the reason. tests/test_librdkafka_keys.py checks that the
committed page equals a fresh rendering and that each client does what the page says.

Usage: python tools/gen_librdkafka_keys.py [OUTPUT]   (default docs/librdkafka-keys.md)
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from kafka_fast.config import REGISTRY  # noqa: E402
from kafka_fast.config.librdkafka_only import REFUSED_BY_CONFLUENT_TOO  # noqa: E402

VERSION = "2.16.0"
SOURCE = os.path.join(HERE, "data", f"librdkafka-{VERSION}-CONFIGURATION.md")
TESTS = os.path.join(ROOT, "tests")
#: librdkafka's C/P column as the client roles here.
ROLES = {"C": ("consumer",), "P": ("producer",), "*": ("producer", "consumer")}
_ROW = re.compile(r"^([a-z][a-z0-9_.]*)\s*\|\s*([CP*])\s*\|")


@dataclass(frozen=True)
class Property:
    """One row of CONFIGURATION.md."""

    section: str
    name: str
    roles: str   # C, P or *


@dataclass(frozen=True)
class Status:
    """What kafka_fast does with a property: ``kind`` is implemented, mapped, ignored,
    as_confluent (refused by confluent-kafka too) or refused (unaccounted when none applies); ``detail`` is the tests, the target key or the
    reason."""

    kind: str
    detail: str
    roles_here: tuple[str, ...] = ()


def properties(path: str = SOURCE) -> list[Property]:
    """Every property row of the stored CONFIGURATION.md, in its order."""
    out, section = [], ""
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.startswith("## "):
                section = line[3:].strip()
                continue
            m = _ROW.match(line)
            if m:
                out.append(Property(section, m.group(1), m.group(2)))
    return out


def _test_texts() -> dict[str, str]:
    texts = {}
    for folder, _, files in os.walk(TESTS):
        for name in files:
            path = os.path.join(folder, name)
            if name.startswith("test_") and name.endswith(".py") \
                    and name != "test_librdkafka_keys.py":
                with open(path, encoding="utf-8", errors="replace") as fh:
                    texts[os.path.relpath(path, ROOT)] = fh.read()
    return texts


def tests_naming(name: str, texts: dict[str, str]) -> list[str]:
    """The test files that name the property (as a whole word), sorted."""
    pattern = re.compile(r"(?<![\w.])" + re.escape(name) + r"(?![\w.])")
    return sorted(path for path, text in texts.items() if pattern.search(text))


def status(prop: Property, texts: dict[str, str]) -> Status:
    key = REGISTRY.lookup(prop.name)
    if key is None:
        reason = REGISTRY.refused.get(prop.name)
        if reason and prop.name in REFUSED_BY_CONFLUENT_TOO:
            return Status("as_confluent", reason)
        return Status("refused", reason) if reason else Status("unaccounted", "")
    here = tuple(r for r in ("producer", "consumer") if r in key.roles)
    if key.name != prop.name:
        return Status("mapped", key.name, here)
    if key.ignored:
        return Status("ignored", "", here)
    found = tests_naming(prop.name, texts)
    return Status("implemented", ", ".join(f"`{p}`" for p in found[:3])
                  + (", ..." if len(found) > 3 else ""), here)


_SHOWN = {"implemented": "implemented", "mapped": "mapped", "ignored": "accepted, no effect",
          "as_confluent": "as confluent-kafka", "refused": "refused",
          "unaccounted": "**not accounted for**"}


def _row(prop: Property, st: Status) -> str:
    if st.kind == "implemented":
        detail = f"tests: {st.detail}" if st.detail else "no test names it"
    elif st.kind == "mapped":
        detail = f"the same as `{st.detail}`"
    elif st.kind == "ignored":
        detail = "a warning says it has no effect"
    elif st.kind == "as_confluent":
        detail = f"confluent-kafka refuses it too; here: {st.detail}"
    else:
        detail = st.detail
    key = REGISTRY.lookup(prop.name)
    if key is not None and "share" in key.roles and "consumer" not in key.roles:
        detail += " (ShareConsumer only; a Consumer warns that it ignores it)"
    if st.roles_here and set(ROLES[prop.roles]) - set(st.roles_here):
        detail += f" ({' and '.join(st.roles_here)} only here)"
    return f"| `{prop.name}` | {prop.roles} | {_SHOWN[st.kind]} | {detail} |"


def render() -> str:
    """The whole Markdown page."""
    texts = _test_texts()
    rows = [(p, status(p, texts)) for p in properties()]
    counts = {kind: sum(1 for _, st in rows if st.kind == kind) for kind in _SHOWN}
    out = [f"""# librdkafka's properties in kafka_fast

Generated by `tools/gen_librdkafka_keys.py` from librdkafka {VERSION}'s CONFIGURATION.md
(`tools/data/librdkafka-{VERSION}-CONFIGURATION.md`, the librdkafka inside the confluent-kafka
wheel the tests pin, written out by `tools/dump_librdkafka_configuration.py`) and the
configuration table in `kafka_fast/config/`; do not edit by hand.
`tests/test_librdkafka_keys.py` builds a Producer and a Consumer with each property and checks
that it is accepted, accepted with the warning, or refused with the reason, as listed here.

Each of librdkafka's {len(rows)} property rows is one of: **implemented** (the tests that name
it), **mapped** (another name for a key here), **accepted, no effect** (a librdkafka internal
with nothing corresponding here: accepted so configurations keep working, with a warning),
**as confluent-kafka** (confluent-kafka refuses it from Python too, whatever the value: C API
pointers and callbacks, Windows-only keys; the error gives the reason and the alternative), or
**refused** (the error gives the reason). {counts['implemented']} implemented,
{counts['mapped']} mapped, {counts['ignored']} accepted with no effect, {counts['as_confluent']}
as confluent-kafka, {counts['refused']} refused. What each implemented key does:
[configuration.md](configuration.md).
"""]
    section = None
    for prop, st in rows:
        if prop.section != section:
            section = prop.section
            out.append(f"\n## {section}\n\n| property | C/P | here | detail |\n|---|---|---|---|\n")
        out.append(_row(prop, st) + "\n")
    return "".join(out)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", nargs="?", default=os.path.join(ROOT, "docs",
                                                                  "librdkafka-keys.md"))
    args = parser.parse_args(argv)
    text = render()
    with open(args.output, "w", encoding="utf-8") as fh:
        fh.write(text)
    missing = [p.name for p in properties() if status(p, {}).kind == "unaccounted"]
    if missing:
        print("not accounted for: " + ", ".join(missing), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
