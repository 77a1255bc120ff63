"""Check that generated code matches a fresh run of its generators.

Usage: python tools/check_generated.py [KAFKA_PROTOCOL_DIR]

KAFKA_PROTOCOL_DIR (default ../shared/kafka-protocol-4.4, Apache Kafka 4.4.0's) holds
message/*.json and error-codes.tsv. Runs tools/gen_protocol.py and tools/gen_errors.py into a
temporary directory and compares with the committed kafka_fast/protocol/messages and
kafka_fast/errors/codes.py. Exits 1 with a summary of the differences, 0 when they match.
When the schema folder is absent it exits 0 with a note, or 1 under CI=true (CI must check).
"""

from __future__ import annotations

import difflib
import filecmp
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DEFAULT_DIR = os.path.join(ROOT, "..", "shared", "kafka-protocol-4.4")
MESSAGES = os.path.join(ROOT, "kafka_fast", "protocol", "messages")
ERROR_CODES = os.path.join(ROOT, "kafka_fast", "errors", "codes.py")


def _run(args: list[str]) -> str | None:
    """Run a generator; its error output when it fails, else None."""
    result = subprocess.run([sys.executable, *args], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    return (result.stderr.strip() or f"exit status {result.returncode}") if (
        result.returncode) else None


def _diff_summary(committed: str, fresh: str, label: str, limit: int = 20) -> list[str]:
    with open(committed, encoding="utf-8") as fh:
        old = fh.readlines()
    with open(fresh, encoding="utf-8") as fh:
        new = fh.readlines()
    diff = list(difflib.unified_diff(old, new, f"committed/{label}", f"generated/{label}", n=1))
    lines = [line.rstrip("\n") for line in diff[:limit]]
    if len(diff) > limit:
        lines.append(f"... {len(diff) - limit} more diff lines")
    return lines


def compare_dirs(committed: str, fresh: str) -> list[str]:
    """Problems found comparing two generated packages (only *.py files count)."""
    problems = []
    have = {f for f in os.listdir(committed) if f.endswith(".py")} if os.path.isdir(committed) else set()
    want = {f for f in os.listdir(fresh) if f.endswith(".py")}
    for name in sorted(want - have):
        problems.append(f"missing from the repository: {name}")
    for name in sorted(have - want):
        problems.append(f"not produced by the generator (stale): {name}")
    for name in sorted(have & want):
        a, b = os.path.join(committed, name), os.path.join(fresh, name)
        if not filecmp.cmp(a, b, shallow=False):
            problems.append(f"differs: {name}")
            problems.extend("    " + line for line in _diff_summary(a, b, name))
    return problems


def main(argv: list[str]) -> int:
    base = argv[1] if len(argv) > 1 else DEFAULT_DIR
    schemas = os.path.join(base, "message")
    tsv = os.path.join(base, "error-codes.tsv")
    if not os.path.isdir(schemas):
        if os.environ.get("CI", "").lower() == "true":
            print(f"check_generated: FAILED, schema folder {schemas} not found (CI=true)")
            return 1
        print(f"check_generated: skipped, schema folder {schemas} not found")
        return 0
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "messages")
        failed = _run([os.path.join(HERE, "gen_protocol.py"), schemas, out])
        if failed:
            print(f"check_generated: FAILED, tools/gen_protocol.py: {failed}")
            return 1
        problems += compare_dirs(MESSAGES, out)
        if os.path.isfile(tsv):
            fresh = os.path.join(tmp, "codes.py")
            failed = _run([os.path.join(HERE, "gen_errors.py"), tsv, fresh])
            if failed:
                print(f"check_generated: FAILED, tools/gen_errors.py: {failed}")
                return 1
            if not os.path.isfile(ERROR_CODES):
                problems.append("missing from the repository: kafka_fast/errors/codes.py")
            elif not filecmp.cmp(ERROR_CODES, fresh, shallow=False):
                problems.append("differs: kafka_fast/errors/codes.py")
                problems.extend(
                    "    " + line for line in _diff_summary(ERROR_CODES, fresh, "codes.py")
                )
        else:
            print(f"check_generated: {tsv} not found, error codes not checked")
    if problems:
        print("check_generated: committed output differs from a fresh run of the generators:")
        for line in problems:
            print("  " + line)
        print("Regenerate with `make gen` and commit the result.")
        return 1
    print("check_generated: generated code is up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
