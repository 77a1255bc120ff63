#!/usr/bin/env bash
# Build the compiled record engine with AddressSanitizer + UndefinedBehaviorSanitizer (gcc) into
# a separate tree (build/sanitize; the normal in-place build is untouched) and run the
# record-engine tests against it: tests/core (corruption, fuzz, twins, buffer sizing, bounds).
#
#   tools/sanitize.sh [python]          # default: python3; extra pytest args via SANITIZE_PYTEST
#
# Any sanitizer report aborts the interpreter, so it fails the test run. Leak detection is off
# (CPython keeps interned objects alive at exit). PYTHONMALLOC=malloc puts every Python object
# in ASan-checked memory (pymalloc's arenas are not), so reading past a bytes object is caught.
set -euo pipefail

PY=${1:-python3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${SANITIZE_DIR:-$ROOT/build/sanitize}
TESTS=${SANITIZE_TESTS:-tests/core}
cd "$ROOT"

LIBASAN=$(gcc -print-file-name=libasan.so)
if [ ! -e "$LIBASAN" ]; then
    echo "sanitize: gcc has no libasan ($LIBASAN); install gcc's libasan (Debian: libgcc-12-dev)" >&2
    exit 1
fi

start=$(date +%s)
# the pure-Python part of the package, then the instrumented extensions next to it (kept
# between runs: unchanged sources are not compiled again)
mkdir -p "$OUT/pkg" "$OUT/tmp"
"$PY" - "$OUT/pkg" <<'PYEOF'
import shutil, sys
shutil.copytree("kafka_fast", sys.argv[1] + "/kafka_fast", dirs_exist_ok=True,
                ignore=shutil.ignore_patterns("*.so", "__pycache__", "_*.c"))
PYEOF
FLAGS="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g"
CC=gcc CFLAGS="$FLAGS" LDFLAGS="$FLAGS" \
    "$PY" setup.py -q build_ext --build-lib "$OUT/pkg" --build-temp "$OUT/tmp" -j 2 >/dev/null
built=$(date +%s)
echo "sanitize: built $(ls "$OUT"/pkg/kafka_fast/_native/*.so | wc -l) extensions with" \
     "ASan+UBSan in $((built - start)) s"

# -P: import kafka_fast from the instrumented tree, not from the working directory
export LD_PRELOAD="$LIBASAN"
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
export PYTHONMALLOC=malloc
export PYTHONPATH="$OUT/pkg"
# as -P, also for the test worker processes pytest starts
export PYTHONSAFEPATH=1

# canary: an overflow must be reported here, or the sanitizer is not really watching
if canary=$("$PY" -P -c "
import ctypes
src, dst = bytes(8), ctypes.create_string_buffer(64)
ctypes.memmove(dst, src, 64)" 2>&1); then
    echo "sanitize: ASan did not report a 64-byte read from an 8-byte object" >&2
    exit 1
fi
grep -q "heap-buffer-overflow" <<<"$canary" || { echo "$canary" >&2; exit 1; }
echo "sanitize: ASan is live (canary overflow reported)"
"$PY" -P -c "
import kafka_fast._native._records as r, sys
assert r.__file__.startswith('$OUT/pkg/'), r.__file__
print('sanitize: testing', r.__file__)"
# two worker processes (SANITIZE_WORKERS), each under the sanitizers like the parent
# shellcheck disable=SC2086  # SANITIZE_PYTEST holds several arguments
"$PY" -P -m pytest -q -p no:cacheprovider -o addopts="" -n "${SANITIZE_WORKERS:-2}" $TESTS \
    ${SANITIZE_PYTEST:-}

# fuzz briefly with the normal build (atheris' coverage does not work under gcc's ASan
# runtime), then replay every input found, and the committed corpus, under the sanitizers
CORPUS="$OUT/fuzz-corpus"
env -u LD_PRELOAD -u PYTHONMALLOC PYTHONPATH="$ROOT" \
    "$PY" -P tools/fuzz.py run --seconds "${SANITIZE_FUZZ_SECONDS:-5}" --corpus "$CORPUS" \
    --artifacts "$OUT/fuzz-artifacts"
"$PY" -P tools/fuzz.py replay --corpus "$CORPUS"
echo "sanitize: tests passed under ASan+UBSan; total $(($(date +%s) - start)) s"
