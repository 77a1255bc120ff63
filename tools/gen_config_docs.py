"""Generate docs/configuration.md from the configuration table in kafka_fast/config.

Usage: python tools/gen_config_docs.py [OUTPUT]   (default docs/configuration.md)
The test suite checks the committed file equals a fresh rendering, so it cannot drift.
"""

from __future__ import annotations

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from kafka_fast.config import REGISTRY  # noqa: E402

INTRO = """\
# Configuration

Generated from the configuration table in `kafka_fast/config/` by `tools/gen_config_docs.py`;
do not edit by hand. Pass keys in the dict given to `Producer`, `Consumer`, `ShareConsumer` or
`AdminClient`, exactly as with confluent-kafka. A key of another client (a producer key given
to a consumer, a ShareConsumer key given to a Consumer, ...) warns and is ignored. An unknown
key raises `KafkaException` with `_INVALID_ARG`;
a librdkafka property that cannot work here is refused with the reason
([librdkafka-keys.md](librdkafka-keys.md) accounts for every librdkafka property).

Columns: **librdkafka** / **Java** say whether those clients have a property with the same
name and meaning. Keys marked *accepted, no effect* exist so that confluent-kafka configurations
keep working; they change nothing here.
"""

#: Sections after the first, each with the roles of its keys exactly; "Every client" holds the
#: keys of more than one role that none of them holds.
SECTIONS = (
    ("Producer", frozenset({"producer"})),
    ("Consumer and ShareConsumer", frozenset({"consumer", "share"})),
    ("Consumer", frozenset({"consumer"})),
    ("ShareConsumer", frozenset({"share"})),
    ("Admin", frozenset({"admin"})),
)


def _default(key) -> str:
    value = key.default
    if value is None or value == "" or value == []:
        return "—"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(map(str, value))
    return str(value)


def _row(key) -> str:
    doc = key.doc
    if key.kind == "enum":
        doc += " One of: " + ", ".join(f"`{c}`" for c in key.choices if c) + "."
    if key.aliases:
        doc += " Aliases: " + ", ".join(f"`{a}`" for a in key.aliases) + "."
    if key.ignored:
        doc += " *Accepted, no effect.*"
    yes = {True: "yes", False: "no"}
    return (
        f"| `{key.name}` | {key.kind} | `{_default(key)}` | {yes[key.librdkafka]} | "
        f"{yes[key.java]} | {doc} |"
    )


def render() -> str:
    """The whole Markdown page."""
    out = [INTRO]
    sectioned = {roles for _, roles in SECTIONS}
    every = [k for k in REGISTRY.keys.values()
             if len(k.roles) > 1 and frozenset(k.roles) not in sectioned]
    for title, keys in (("Every client", every),
                        *((title, [k for k in REGISTRY.keys.values()
                                   if frozenset(k.roles) == roles])
                          for title, roles in SECTIONS)):
        if not keys:
            continue
        out.append(f"\n## {title}\n\n| key | type | default | librdkafka | Java | meaning |\n")
        out.append("|---|---|---|---|---|---|\n")
        out.extend(_row(k) + "\n" for k in sorted(keys, key=lambda k: k.name))
    return "".join(out)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="Render docs/configuration.md from the table.")
    parser.add_argument("output", nargs="?",
                        default=os.path.join(HERE, "..", "docs", "configuration.md"))
    path = parser.parse_args(argv[1:]).output
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(render())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
