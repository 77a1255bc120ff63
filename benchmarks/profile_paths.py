"""Where each client path spends its CPU time: samples of the benchmark worker.

Runs each case (``kafka_fast.produce``, ``kafka_fast.produce_batch``, ``kafka_fast.poll``,
``kafka_fast.consume``, ``kafka_fast.consume_batch`` by default) in a fresh benchmark worker
process against an embedded Tansu (or ``--bootstrap``) and writes ``docs/bench/profiles.md``.

What runs by default:

- ``perf record`` (Debian ``linux-perf``) samples the CPU: only running threads, kernel work
  included (socket calls, page faults, copies to and from user memory), and only the measured
  span of the case (the worker tells perf when to start and stop through ``--control``
  FIFOs). The tables give CPU shares per thread, per kind of work and per function.
- ``py-spy record --native --threads`` adds the Python view: which kafka_fast Python
  functions are on the stack (inclusive), with samples of threads that wait (for the
  interpreter lock, a socket, a queue) left out.
- ``perf stat`` counts futex system calls and context switches over the same span: the
  hand-offs of the interpreter lock (and of queues) between threads, per million records.
  With ``--before COMMIT`` every case is also measured on COMMIT (built in a worktree under
  build/ab/) with perf record and perf stat: the lock's before-and-after table.
- ``valgrind --tool=callgrind`` counts the instructions per record of the compiled record
  engine alone (encode one batch, check and parse it into columns; no broker).

Each needs its tool (``apt install linux-perf valgrind``, ``pip install py-spy``) and the
permission to
sample (root in a container, or ``kernel.perf_event_paranoid`` <= 1 and
``kernel.yama.ptrace_scope=0``); ``--tools`` picks which run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_ab import check_side, prepare_base  # noqa: E402
from benchmarks.brokers import KINDS, broker_for  # noqa: E402
from kafka_fast.bench.clients import CASE  # noqa: E402
from kafka_fast.bench.result import PERF_ACK, PERF_CTL  # noqa: E402
from kafka_fast.bench.runner import BenchConfig, admin_create_topic, run_case  # noqa: E402
from kafka_fast.bench.store import commit, machine  # noqa: E402

DEFAULT_CASES = ("kafka_fast.produce", "kafka_fast.produce_batch", "kafka_fast.poll",
                 "kafka_fast.consume", "kafka_fast.consume_batch")
_FRAME = re.compile(r"^(?P<name>.*?) \((?P<where>[^()]*)\)$")
_THREAD = re.compile(r"^thread \(\d+\)(?:: (?P<name>.*))?$")
#: frames of work outside the measured path (imports, building the payload)
SETUP = ("<frozen importlib", "Payload.make", "/payload.py:")
#: native frames of a thread that is not running: waiting for the interpreter lock (the
#: condition variable of ``take_gil``), a socket, a queue or a timer
WAITS = frozenset({"epoll_wait", "pthread_cond_wait", "pthread_cond_timedwait", "sem_wait",
                   "sem_timedwait", "sem_clockwait", "take_gil", "__futex_abstimed_wait_common",
                   "nanosleep", "clock_nanosleep", "select", "__select", "poll", "__poll",
                   "ppoll"})


def _waiting(frames: list[str]) -> bool:
    """Whether a py-spy stack is a thread that waits: a native wait function near the top
    (not a Python or Cython function of the same name)."""
    for frame in frames[-4:]:
        m = _FRAME.match(frame)
        if m and m.group("name") in WAITS and ".py" not in m.group("where"):
            return True
    return False


def _short(frame: str) -> str:
    """``function (file:line)`` as ``function (module file)``, native ``symbol (lib)``."""
    m = _FRAME.match(frame)
    if not m:
        return frame
    where = m.group("where")
    path = where.split(":")[0]
    return f"{m.group('name')} ({os.path.basename(path)})"


def summarize(raw: str, top: int = 12) -> dict:
    """Samples per thread, self time per leaf frame and inclusive time per kafka_fast
    function, from py-spy's raw (collapsed) output."""
    threads: Counter[str] = Counter()
    leaves: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = setup = waiting = 0
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        frames = stack.split(";")
        if any(marker in frame for frame in frames for marker in SETUP):
            setup += n  # imports and building the payload, not the measured path
            continue
        if _waiting(frames):
            waiting += n  # a thread that is not running
            continue
        total += n
        m = _THREAD.match(frames[0])
        threads[(m.group("name") or "(unnamed)") if m else frames[0]] += n
        leaves[_short(frames[-1])] += n
        seen = set()
        for frame in frames[1:]:
            short = _short(frame)
            if "kafka_fast" in frame and short not in seen:
                seen.add(short)
                inclusive[short] += n
    return {"total": total, "setup": setup, "waiting": waiting, "threads": threads.most_common(),
            "self": leaves.most_common(top), "inclusive": inclusive.most_common(top)}


_PERF_HEAD = re.compile(r"^\s*(?P<pid>\d+)/(?P<tid>\d+)\s*(?P<rest>.*)$")
_PERF_FRAME = re.compile(r"^\s*[0-9a-f]+\s+(?P<sym>.*?)\s+\((?P<dso>[^()]*)\)\s*$")
#: what a kernel sample is part of, by the functions on its kernel stack (first match wins)
KERNEL_KINDS = (
    (("exc_page_fault",), "kernel: page faults (first touch of fresh memory)"),
    (("sendmsg", "sendto", "sys_write"), "kernel: send (TCP, copy from user memory)"),
    (("recvmsg", "recvfrom", "sys_read"), "kernel: receive (TCP, copy to user memory)"),
    (("futex",), "kernel: futex (thread hand-offs, interpreter lock)"),
    (("epoll", "sys_poll", "sys_select"), "kernel: epoll"),
    (("munmap", "madvise", "sys_brk", "sys_mmap", "mprotect"),
     "kernel: mapping and unmapping memory"),
    (("net_rx_action", "do_softirq"), "kernel: network softirq (loopback delivery)"),
    (("nanosleep", "hrtimer"), "kernel: timers and sleeps"),
    (("schedule", "finish_task_switch", "__switch_to"), "kernel: scheduling"),
    (("sysvec", "irq"), "kernel: interrupts"),
)
_LIBC_COPY = ("memcpy", "memmove", "memset", "__memcpy", "__memmove", "__memset", "memcmp",
              "__memcmp", "strlen")
_LIBC_ALLOC = ("malloc", "free", "_int_malloc", "_int_free", "realloc", "calloc", "cfree",
               "malloc_consolidate", "unlink_chunk", "_int_realloc", "tcache", "sysmalloc")


def kind_of_work(sym: str, dso: str, kernel_stack: tuple[str, ...] = ()) -> str:
    """The kind of work a CPU sample at ``sym`` in ``dso`` (a path or ``[kernel.kallsyms]``)
    is part of; a kernel sample is placed by the functions on its ``kernel_stack``."""
    base = os.path.basename(dso)
    if dso.startswith("[kernel"):
        for words, kind in KERNEL_KINDS:
            if any(w in frame for frame in (sym, *kernel_stack) for w in words):
                return kind
        return "kernel: other"
    if "crc32c" in sym or sym.startswith("kf_crc") or "crc32c" in base:
        return "CRC32C"
    if sym.startswith("kf_"):
        return "record encode/decode (C)"
    if "kafka_fast" in dso:
        return "kafka_fast compiled (Cython)"
    if any(w in base for w in ("lz4", "zstd", "snappy", "libz.")):
        return "compression"
    if "libpython" in base or base.startswith("python3"):
        return "Python interpreter"
    if "numpy" in dso or "_multiarray" in base:
        return "numpy"
    if base.startswith("libc.so") or base.startswith("libc-"):
        if any(sym.startswith(w) for w in _LIBC_COPY):
            return "libc: memcpy/memmove/memset"
        if any(sym.startswith(w) for w in _LIBC_ALLOC):
            return "libc: malloc/free"
        return "libc: other"
    if base == "[vdso]":
        return "vdso (clock reads)"
    return f"other ({base or dso})"


def cython_name(sym: str) -> str:
    """A C symbol of kafka_fast's Cython modules
    (``__pyx_pw_10kafka_fast_7_native_8_records_5encode_batch``) as ``_records.encode_batch``;
    other symbols unchanged."""
    m = re.match(r"^__pyx_[a-z]+_10kafka_fast_7_native_(\d+)", sym)
    if not m:
        return sym
    n, rest = int(m.group(1)), sym[m.end():]
    module, tail = rest[:n], rest[n + 1:]
    return module + "." + re.sub(r"^\d+", "", tail)


def perf_samples(script: str) -> Iterator[tuple[str, str, list[tuple[str, str]]]]:
    """``(pid, tid, [(symbol, dso), ...] leaf first)`` per sample of ``perf script -F
    pid,tid,ip,sym,dso`` output, with or without call chains."""
    head: re.Match[str] | None = None
    frames: list[tuple[str, str]] = []
    for line in [*script.splitlines(), ""]:
        m = _PERF_HEAD.match(line)
        if m:
            if head is not None and frames:
                yield head.group("pid"), head.group("tid"), frames
            head, frames = m, []
            rest = _PERF_FRAME.match(m.group("rest")) if m.group("rest") else None
            if rest:  # no call chain: the frame is on the header line
                frames.append((rest.group("sym"), rest.group("dso")))
            continue
        f = _PERF_FRAME.match(line)
        if f and head is not None:
            frames.append((f.group("sym"), f.group("dso")))
        elif not line.strip() and head is not None:
            if frames:
                yield head.group("pid"), head.group("tid"), frames
            head, frames = None, []


def summarize_perf(script: str, top: int = 15) -> dict:
    """CPU samples per thread (the calling thread against the client's own threads), per kind
    of work and per function, from ``perf script -F pid,tid,ip,sym,dso``."""
    threads: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    funcs: Counter[str] = Counter()
    total = 0
    for pid, tid, frames in perf_samples(script):
        total += 1
        sym, dso = frames[0]
        kernel = tuple(s for s, d in frames if d.startswith("[kernel"))
        threads["calling thread" if pid == tid else "client threads (I/O, encoders)"] += 1
        kinds[kind_of_work(sym, dso, kernel)] += 1
        funcs[f"{cython_name(sym)} ({os.path.basename(dso) or dso})"] += 1
    return {"total": total, "threads": threads.most_common(), "kinds": kinds.most_common(),
            "self": funcs.most_common(top)}


def _under_perf(perf_args: list[str], cmd: list[str], tree: Path) -> subprocess.CompletedProcess:
    """Run ``cmd`` (from ``tree``) under ``perf <perf_args>`` started disabled, with the
    control FIFOs through which the worker enables perf for the span its stopwatch
    measures (``kafka_fast.bench.result.perf_control``)."""
    with tempfile.TemporaryDirectory() as fifo_dir:
        ctl, ack = Path(fifo_dir) / "ctl", Path(fifo_dir) / "ack"
        os.mkfifo(ctl)
        os.mkfifo(ack)
        env = {**os.environ, PERF_CTL: str(ctl), PERF_ACK: str(ack)}
        if tree != ROOT:
            env["PYTHONPATH"] = str(tree)
            env.pop("KAFKA_FAST_NO_EXTENSIONS", None)
        full = [*perf_args, "-D", "-1", "--control", f"fifo:{ctl},{ack}", "--", *cmd]
        return subprocess.run(full, capture_output=True, text=True, cwd=tree, env=env,
                              timeout=1800)


def run_perf(perf: str, cmd: list[str], data: Path, rate: int, tree: Path = ROOT
             ) -> tuple[str, str]:
    """Run ``cmd`` under ``perf record``, sampling only what the worker's stopwatch measures;
    ``(perf script text, the worker's stdout)``."""
    proc = _under_perf([perf, "record", "-g", "-F", str(rate), "-o", str(data)], cmd, tree)
    if proc.returncode != 0 or not data.exists():
        raise SystemExit(f"perf record failed: {proc.stderr.strip()[-500:]}")
    script = subprocess.run([perf, "script", "-i", str(data), "-F", "pid,tid,ip,sym,dso"],
                            capture_output=True, text=True, cwd=ROOT, timeout=600)
    if script.returncode != 0:
        raise SystemExit(f"perf script failed: {script.stderr.strip()[-500:]}")
    return script.stdout, proc.stdout


#: what ``perf stat`` counts over the measured span: futex system calls (a thread that waits
#: for the interpreter lock, or wakes its waiter, makes them; so do queue and condition
#: hand-offs between threads) and context switches
STAT_EVENTS = {"syscalls:sys_enter_futex": "futex", "context-switches": "switches"}


def run_stat(perf: str, cmd: list[str], tree: Path = ROOT) -> tuple[dict[str, float], str]:
    """Counts of ``STAT_EVENTS`` over the span the worker's stopwatch measures, and the
    worker's stdout."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "stat.csv"
        proc = _under_perf([perf, "stat", "-x", ",", "-o", str(out), "-e",
                            ",".join(STAT_EVENTS)], cmd, tree)
        text = out.read_text() if out.exists() else ""
    if proc.returncode != 0:
        raise SystemExit(f"perf stat failed: {proc.stderr.strip()[-500:]}")
    return parse_stat(text), proc.stdout


def parse_stat(text: str) -> dict[str, float]:
    """``{futex, switches}`` from ``perf stat -x ,`` output (value,unit,event,...)."""
    counts: dict[str, float] = {}
    for line in text.splitlines():
        fields = line.split(",")
        if len(fields) >= 3 and fields[2] in STAT_EVENTS:
            if fields[0] == "<not counted>":  # never enabled: nothing was measured
                counts[STAT_EVENTS[fields[2]]] = 0.0
                continue
            try:
                counts[STAT_EVENTS[fields[2]]] = float(fields[0])
            except ValueError as exc:  # "<not supported>", "<not counted>"
                raise SystemExit(f"perf stat could not count {fields[2]}: {fields[0]}") from exc
    missing = set(STAT_EVENTS.values()) - set(counts)
    if missing:
        raise SystemExit(f"perf stat gave no count of {sorted(missing)}: {text[-300:]}")
    return counts


def commit_of(ref: str) -> str:
    """The 12-digit commit ``ref`` names."""
    return subprocess.run(["git", "rev-parse", "--short=12", ref], cwd=ROOT, check=True,
                          capture_output=True, text=True).stdout.strip()


def worker_result(stdout: str) -> dict | None:
    """The ``RESULT {json}`` line a benchmark worker prints, parsed."""
    for line in stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    return None


#: what runs under callgrind: one batch of ``n`` records encoded from lists of bytes
#: (100-byte values, 10-byte keys), then decoded (CRC checked) and parsed into columns
CALLGRIND_SCRIPT = """
import sys
from kafka_fast._native._records import decode_batches, encode_batch
n = int(sys.argv[1])
values = [b"v" * 90 + i.to_bytes(10, "big") for i in range(n)]
keys = [i.to_bytes(10, "big") for i in range(n)]
batch = encode_batch(values, keys)
columns = decode_batches(batch)[0].columns()
assert len(columns.offsets) == n, len(columns.offsets)
"""
#: (row label, function name pattern) of the instruction-count table
CALLGRIND_ROWS = (
    ("encode_batch: lists of bytes to one record batch, CRC32C included",
     r"__pyx_pw_\w*_records_\d+encode_batch"),
    ("  of which sizing the records (kf_bulk_size)", r"kf_bulk_size"),
    ("  of which writing the records (kf_bulk_write)", r"kf_bulk_write"),
    ("decode_batches: batch header and CRC32C check", r"__pyx_pw_\w*_records_\d+decode_batches"),
    ("RecordBatch.columns: records into key/value/offset columns",
     r"__pyx_pw_\w*RecordBatch_\d+columns"),
    ("  of which parsing the records (kf_columns_parse)", r"kf_columns_parse"),
    ("  of which copying keys and values (kf_columns_copy)", r"kf_columns_copy"),
    ("CRC32C of both batches (kf_crc32c)", r"kf_crc32c"),
)
_CG_LINE = re.compile(r"^\s*(?P<ir>[\d,]+) \(\s*[\d.]+%\)\s+(?:\S*?):(?P<fn>[\w.]+)(?: \[.*\])?$")


def callgrind_counts(annotated: str) -> dict[str, int]:
    """Inclusive instructions per function from ``callgrind_annotate --inclusive=yes``
    (a function listed under several source files counts its largest entry)."""
    counts: dict[str, int] = {}
    for line in annotated.splitlines():
        m = _CG_LINE.match(line)
        if m:
            ir = int(m.group("ir").replace(",", ""))
            counts[m.group("fn")] = max(ir, counts.get(m.group("fn"), 0))
    return counts


def callgrind_rows(counts: dict[str, int], records: int) -> list[tuple[str, float]]:
    """``(label, instructions per record)`` of ``CALLGRIND_ROWS`` found in ``counts``."""
    rows = []
    for label, pattern in CALLGRIND_ROWS:
        found = [ir for fn, ir in counts.items() if re.fullmatch(pattern, fn)]
        if found:
            rows.append((label, max(found) / records))
    return rows


def run_callgrind(valgrind: str, annotate: str, records: int, workdir: Path) -> dict[str, int]:
    """Run ``CALLGRIND_SCRIPT`` under callgrind; inclusive instructions per function."""
    out = workdir / "callgrind.out"
    proc = subprocess.run([valgrind, "--tool=callgrind", f"--callgrind-out-file={out}",
                           sys.executable, "-c", CALLGRIND_SCRIPT, str(records)],
                          capture_output=True, text=True, cwd=ROOT, timeout=1800)
    if proc.returncode != 0 or not out.exists():
        raise SystemExit(f"callgrind failed: {proc.stderr.strip()[-500:]}")
    text = subprocess.run([annotate, "--inclusive=yes", "--threshold=100", str(out)],
                          capture_output=True, text=True, timeout=600).stdout
    return callgrind_counts(text)


def _table(rows: list[tuple[str, int]], total: int, what: str,
           per_million: float | None = None) -> list[str]:
    """A Markdown table of shares; with ``per_million`` (the case's CPU s/M) a column of each
    row's CPU seconds per million records too."""
    if per_million is None:
        out = [f"| {what} | share |", "|---|---:|"]
        out += [f"| `{name}` | {100.0 * n / max(total, 1):.1f}% |" for name, n in rows]
        return out
    out = [f"| {what} | share of CPU | CPU s/M |", "|---|---:|---:|"]
    out += [f"| `{name}` | {100.0 * n / max(total, 1):.1f}% | "
            f"{per_million * n / max(total, 1):.3f} |" for name, n in rows]
    return out


FUTEX_KIND = "kernel: futex (thread hand-offs, interpreter lock)"


def futex_share(perf: dict | None) -> str:
    """The share of a CPU profile's samples in the kernel's futex code, as text."""
    if not perf or not perf["total"]:
        return ""
    return f"{dict(perf['kinds']).get(FUTEX_KIND, 0) / perf['total']:.1%}"


def lock_table(profiles: dict[str, dict], meta: dict) -> list[str]:
    """The interpreter lock before and after: per case, the futex share of the CPU samples,
    futex system calls and context switches per million records (each from its own run)."""
    rows = [(case, prof) for case, prof in profiles.items() if "stat" in prof or "perf" in prof]
    if not rows:
        return []
    has_before = any("before" in prof for _, prof in rows)

    def cells(prof: dict) -> list[str]:
        stat = prof.get("stat") or {}
        cpu = prof.get("cpu_per_million")
        return [f"{cpu:.3f}" if cpu is not None else "", futex_share(prof.get("perf")),
                f"{stat['futex']:,.0f}" if stat else "", f"{stat['switches']:,.0f}" if stat else ""]

    heads = ["CPU s/M", "futex share of CPU samples", "futex calls per M records",
             "context switches per M records"]
    out = ["## The interpreter lock", ""]
    if has_before:
        out += [f"Each case measured on commit `{meta['before']}` (before) and on "
                f"`{meta['commit']}` (after) against the same broker, each figure from its own "
                "fresh worker process (`--before`).", ""]
    out += ["| case | commit | " + " | ".join(heads) + " |", "|---|---|" + "---:|" * len(heads)]
    for case, prof in rows:
        if has_before:
            out.append(f"| {case} | `{meta['before']}` (before) | "
                       + " | ".join(cells(prof.get("before") or {})) + " |")
        out.append(f"| {case} | `{meta['commit']}` | " + " | ".join(cells(prof)) + " |")
    out += ["", "A futex call is made by a thread that waits for the interpreter lock or wakes "
            "the thread waiting for it, and by the other hand-offs between the calling thread, "
            "the I/O thread and the encoder threads (queues, conditions); counted by "
            "`perf stat -e syscalls:sys_enter_futex` over the span the case's CPU figure covers.",
            ""]
    return out


def render(profiles: dict[str, dict], meta: dict) -> str:
    """``docs/bench/profiles.md``: per case, perf's CPU tables and py-spy's Python view."""
    lines = ["# Profiles of the client paths", "",
             f"Generated by `benchmarks/profile_paths.py` on {meta['broker']}: "
             f"{meta['records']:,} records of {meta['size']} bytes with {meta['key_size']}-byte "
             f"keys, {meta['partitions']} partitions, compression {meta['compression']}. "
             f"Commit `{meta['commit']}`, {meta['machine']}. Each case runs in a fresh "
             "benchmark worker process.", "",
             "- **CPU** (`perf record`, kernel included): samples of running threads only, "
             "taken only while the case's stopwatch runs (first call until every record is "
             "acknowledged or read). CPU s/M spreads the case's measured CPU seconds per "
             "million records over the rows by their share of samples.",
             "- **Python view** (`py-spy record --native --threads`): which kafka_fast Python "
             "functions are on the stack of running threads; samples of waiting threads "
             "(interpreter lock, socket, queue, timer) and of imports and building the payload "
             "left out.", ""]
    lock = lock_table(profiles, meta)
    if lock:
        lines += lock
    instructions = meta.get("instructions")
    if instructions:
        lines += ["## Instructions per record (callgrind)", "",
                  f"The compiled record engine alone, under valgrind's callgrind: one batch of "
                  f"{meta['instruction_records']:,} records (100-byte values, 10-byte keys) "
                  "encoded from lists of bytes, then checked and parsed into columns; "
                  "inclusive instruction counts per record (valgrind's CPU has no AVX-512, so "
                  "CRC32C runs its PCLMUL code path here).", "",
                  "| native call | instructions per record |", "|---|---:|"]
        lines += [f"| {label} | {per:,.0f} |" for label, per in instructions]
        lines.append("")
    for case, prof in profiles.items():
        lines += [f"## {case}", ""]
        perf, cpu = prof.get("perf"), prof.get("cpu_per_million")
        if perf is not None:
            total = perf["total"]
            cpu_text = f", {cpu:.3f} CPU s per million records" if cpu is not None else ""
            lines += [f"CPU: {total:,} samples{cpu_text}.", ""]
            lines += _table(perf["threads"], total, "thread", cpu) + [""]
            lines += _table(perf["kinds"], total, "kind of work", cpu) + [""]
            lines += _table(perf["self"], total, "function (self)", cpu) + [""]
        spy = prof.get("pyspy")
        if spy is not None:
            lines += [f"Python view: {spy['total']:,} samples of running threads "
                      f"({spy['waiting']:,} of waiting threads and {spy['setup']:,} in imports "
                      "and payload building left out).", ""]
            lines += _table(spy["inclusive"], spy["total"],
                            "kafka_fast function (inclusive)") + [""]
    return "\n".join(lines)


#: what a ``--before`` tree is measured with: the CPU profile (for the futex share) and the
#: counts
LOCK_TOOLS = ("perf", "stat")


def measure(name: str, worker: list[str], tools: list[str], raw_dir: Path,
            args: argparse.Namespace, perf: str | None, spy: str, tree: Path = ROOT) -> dict:
    """Every tool of ``tools`` on one fresh worker process each (from ``tree``)."""
    raw_dir.mkdir(parents=True, exist_ok=True)
    prof: dict = {}

    def cpu_of(stdout: str, tool: str) -> float:
        result = worker_result(stdout)
        if result is None or result.get("error"):
            raise SystemExit(f"{name} failed under {tool}: {stdout.strip()[-500:]}")
        prof["records"] = result["records"]
        return result["cpu_s"] / result["records"] * 1e6

    if "perf" in tools:
        assert perf is not None
        script, stdout = run_perf(perf, worker, raw_dir / f"{name}.perf.data",
                                  args.perf_rate, tree)
        (raw_dir / f"{name}.perf.txt").write_text(script)
        prof["perf"] = summarize_perf(script)
        prof["cpu_per_million"] = cpu_of(stdout, "perf")
        print(f"{name}: {prof['perf']['total']} CPU samples, "
              f"{prof['cpu_per_million']:.3f} CPU s/M", flush=True)
    if "stat" in tools:
        assert perf is not None
        counts, stdout = run_stat(perf, worker, tree)
        prof["stat_cpu_per_million"] = cpu_of(stdout, "perf stat")
        prof["stat"] = {k: v / prof["records"] * 1e6 for k, v in counts.items()}
        print(f"{name}: {prof['stat']['futex']:,.0f} futex calls and "
              f"{prof['stat']['switches']:,.0f} context switches per million records",
              flush=True)
    if "py-spy" in tools:
        out = raw_dir / f"{name}.txt"
        cmd = [spy, "record", "--native", "--threads", "--rate", str(args.rate),
               "--format", "raw", "-o", str(out), "--", *worker]
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=1800)
        if proc.returncode != 0 or not out.exists():
            raise SystemExit(f"py-spy failed for {name}: {proc.stderr.strip()[-500:]}")
        prof["pyspy"] = summarize(out.read_text())
        print(f"{name}: {prof['pyspy']['total']} py-spy samples", flush=True)
    return prof


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap")
    ap.add_argument("--broker", choices=KINDS, default="tansu")
    ap.add_argument("-n", "--records", type=int, default=1_000_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--key-size", type=int, default=10)
    ap.add_argument("--partitions", type=int, default=6)
    ap.add_argument("--compression", default="none")
    ap.add_argument("--cases", default=",".join(DEFAULT_CASES))
    ap.add_argument("--tools", default="perf,stat,py-spy,callgrind",
                    help="what to run: perf, stat, py-spy, callgrind")
    ap.add_argument("--before", metavar="COMMIT",
                    help="also measure COMMIT (built in a worktree under build/ab/) with perf "
                         "and stat, for the interpreter lock's before-and-after table")
    ap.add_argument("--instruction-records", type=int, default=100_000,
                    help="records of the callgrind batch")
    ap.add_argument("--rate", type=int, default=250, help="py-spy samples per second")
    ap.add_argument("--perf-rate", type=int, default=2999, help="perf samples per second")
    ap.add_argument("--out", default=str(ROOT / "docs" / "bench" / "profiles.md"))
    ap.add_argument("--raw-dir", help="keep the samplers' raw output here")
    args = ap.parse_args(argv)
    tools = [t for t in args.tools.split(",") if t]
    for t in tools:
        if t not in ("perf", "stat", "py-spy", "callgrind"):
            ap.error(f"--tools: unknown tool {t!r} (perf, stat, py-spy, callgrind)")
    perf = shutil.which("perf")
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if ("perf" in tools or "stat" in tools) and perf is None:
        print("profile_paths: perf not found (apt install linux-perf)", file=sys.stderr)
        return 2
    if "py-spy" in tools and not os.path.exists(spy):
        print("profile_paths: py-spy not found (pip install py-spy)", file=sys.stderr)
        return 2
    valgrind, annotate = shutil.which("valgrind"), shutil.which("callgrind_annotate")
    if "callgrind" in tools and (valgrind is None or annotate is None):
        print("profile_paths: valgrind not found (apt install valgrind)", file=sys.stderr)
        return 2
    cases = [c for c in args.cases.split(",") if c]
    for c in cases:
        if c not in CASE:
            ap.error(f"--cases: unknown case {c!r}")
    before = prepare_base(commit_of(args.before)) if args.before else None
    if before is not None:
        check_side(before)
    profiles: dict[str, dict] = {}
    with broker_for(args.bootstrap, args.broker) as broker, \
            tempfile.TemporaryDirectory() as tmp:
        create = broker.create_topic or admin_create_topic(broker.bootstrap)
        cfg = BenchConfig(bootstrap=broker.bootstrap, records=args.records, size=args.size,
                          key_size=args.key_size, partitions=args.partitions,
                          compressions=[args.compression], acks="1")
        source = f"profile-source-{os.getpid()}"
        create(source, args.partitions)
        if any(CASE[c].direction == "consume" for c in cases):
            fill = run_case(cfg, CASE["kafka_fast.produce_batch"], source, args.compression)
            if fill.error:
                raise SystemExit(f"could not fill {source}: {fill.error}")
        for i, name in enumerate(cases):
            case = CASE[name]
            topic = source
            if case.direction == "produce":
                topic = f"profile-{i}-{os.getpid()}"
                create(topic, args.partitions)
            spec = {"case": name, "bootstrap": broker.bootstrap, "topic": topic,
                    "partitions": args.partitions, "compression": args.compression,
                    "acks": "1", "records": args.records, "size": args.size,
                    "key_size": args.key_size, "producers": 1}
            worker = [sys.executable, "-m", "kafka_fast.bench.worker", json.dumps(spec)]
            raw_dir = Path(args.raw_dir or tmp)
            raw_dir.mkdir(parents=True, exist_ok=True)
            prof = measure(name, worker, tools, raw_dir, args, perf, spy)
            if before is not None:
                print(f"{name}: before ({before.name})", flush=True)
                prof["before"] = measure(name, worker, [t for t in tools if t in LOCK_TOOLS],
                                         raw_dir / "before", args, perf, spy, tree=before)
            profiles[name] = prof
        instructions = None
        if "callgrind" in tools:
            assert valgrind is not None and annotate is not None
            counts = run_callgrind(valgrind, annotate, args.instruction_records, Path(tmp))
            instructions = callgrind_rows(counts, args.instruction_records)
            print(f"callgrind: {len(instructions)} rows", flush=True)
        meta = {"instructions": instructions,
                "instruction_records": args.instruction_records,
                "broker": broker.name, "records": args.records, "size": args.size,
                "key_size": args.key_size, "partitions": args.partitions,
                "compression": args.compression, "commit": commit(),
                "before": args.before and commit_of(args.before),
                "machine": f"{machine()['cpu']}, {machine()['cpus']} CPUs"}
    Path(args.out).write_text(render(profiles, meta) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
