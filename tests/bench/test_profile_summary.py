"""benchmarks/profile_paths.py's summaries of py-spy's collapsed stacks and perf's samples."""

from __future__ import annotations

import shutil
import sys
import textwrap

import pytest
from harness.peers import missing

from benchmarks.profile_paths import (
    callgrind_counts,
    callgrind_rows,
    cython_name,
    kind_of_work,
    parse_stat,
    perf_samples,
    render,
    run_stat,
    summarize,
    summarize_perf,
)

RAW = "\n".join([
    "thread (11): MainThread;main (kafka_fast/bench/worker.py:40);"
    "produce_batch (kafka_fast/producer/producer.py:200);encode_batch (_records.so) 30",
    "thread (11): MainThread;main (kafka_fast/bench/worker.py:40);"
    "produce_batch (kafka_fast/producer/producer.py:200);"
    "produce_batch (kafka_fast/producer/producer.py:200);kf_crc32c (_crc32c.so) 10",
    "thread (12): kafka_fast-io-p;_run (kafka_fast/net/loop.py:90);"
    "send (kafka_fast/net/connection.py:12);sendmsg (libc.so.6) 20",
    # waiting threads: a socket wait, and the interpreter lock's condition variable under a
    # libc address py-spy cannot name
    "thread (12): kafka_fast-io-p;_run (kafka_fast/net/loop.py:90);epoll_wait (libc.so.6) 40",
    "thread (13): kafka_fast-encode_0;run (kafka_fast/producer/encoder.py:9);"
    "pthread_cond_timedwait (libc.so.6);0x7f5fefca3f16 (libc.so.6) 9",
    # a Python function named like a wait function is work, not waiting
    "thread (11): MainThread;main (kafka_fast/bench/worker.py:40);"
    "poll (kafka_fast/producer/producer.py:300) 4",
    "thread (14);write (libc.so.6) 5",
    "thread (11): MainThread;<module> (x.py:1);_call_with_frames_removed "
    "(<frozen importlib._bootstrap>:241) 50",
    "thread (11): MainThread;make (kafka_fast/bench/payload.py:20);fill (rand.so) 7",
    "garbage line",
])


def test_py_spy_samples_are_split_and_waiting_threads_left_out():
    prof = summarize(RAW)
    assert prof["total"] == 69 and prof["setup"] == 57 and prof["waiting"] == 49
    assert prof["threads"] == [("MainThread", 44), ("kafka_fast-io-p", 20), ("(unnamed)", 5)]
    assert prof["self"] == [("encode_batch (_records.so)", 30), ("sendmsg (libc.so.6)", 20),
                            ("kf_crc32c (_crc32c.so)", 10), ("write (libc.so.6)", 5),
                            ("poll (producer.py)", 4)]
    # A function on the stack twice (recursion) counts once per sample.
    assert prof["inclusive"][:3] == [("main (worker.py)", 44),
                                     ("produce_batch (producer.py)", 40),
                                     ("_run (loop.py)", 20)]


# perf script -F pid,tid,ip,sym,dso of a run recorded with -g (call chains) ...
PERF_G = """\
 100/100
\tffffffff81001 clear_page_erms ([kernel.kallsyms])
\tffffffff81002 handle_mm_fault ([kernel.kallsyms])
\tffffffff81003 exc_page_fault ([kernel.kallsyms])
\t    7f0000001 __memmove_avx_unaligned_erms (/usr/lib/x86_64-linux-gnu/libc.so.6)

 100/101
\tffffffff81004 _copy_from_iter ([kernel.kallsyms])
\tffffffff81005 tcp_sendmsg_locked ([kernel.kallsyms])
\tffffffff81006 __sys_sendmsg ([kernel.kallsyms])
\t    7f0000002 sendmsg (/usr/lib/x86_64-linux-gnu/libc.so.6)

 100/101
\t    7f0000003 kf_bulk_write (/w/kafka_fast/_native/_records.cpython-311-x86_64-linux-gnu.so)
\t    7f0000004 __pyx_pw_10kafka_fast_7_native_8_records_5encode_batch (/w/kafka_fast/_native/_records.cpython-311-x86_64-linux-gnu.so)

 100/102
\t    7f0000003 kf_crc_avx512 (/w/kafka_fast/_native/_records.cpython-311-x86_64-linux-gnu.so)

 100/100
\t    7f0000005 _PyEval_EvalFrameDefault (/usr/lib/libpython3.11.so.1.0)

"""
# ... and without (-F puts the one frame on the header line)
PERF_FLAT = """\
 100/100       7f0000005 _PyEval_EvalFrameDefault (/usr/lib/libpython3.11.so.1.0)
 100/101       7f0000006 __pyx_f_10kafka_fast_7_native_10_partition__choose (/w/kafka_fast/_native/_partition.so)
"""


def test_perf_samples_parse_with_and_without_call_chains():
    samples = list(perf_samples(PERF_G))
    assert [(pid, tid, frames[0][0]) for pid, tid, frames in samples] == [
        ("100", "100", "clear_page_erms"), ("100", "101", "_copy_from_iter"),
        ("100", "101", "kf_bulk_write"), ("100", "102", "kf_crc_avx512"),
        ("100", "100", "_PyEval_EvalFrameDefault")]
    assert len(samples[0][2]) == 4
    assert [(t, f) for _, t, f in perf_samples(PERF_FLAT)] == [
        ("100", [("_PyEval_EvalFrameDefault", "/usr/lib/libpython3.11.so.1.0")]),
        ("101", [("__pyx_f_10kafka_fast_7_native_10_partition__choose",
                  "/w/kafka_fast/_native/_partition.so")])]


def test_perf_summary_places_kernel_samples_by_their_stack():
    prof = summarize_perf(PERF_G)
    assert prof["total"] == 5
    assert prof["threads"] == [("client threads (I/O, encoders)", 3), ("calling thread", 2)]
    assert dict(prof["kinds"]) == {
        "kernel: page faults (first touch of fresh memory)": 1,
        "kernel: send (TCP, copy from user memory)": 1,
        "record encode/decode (C)": 1, "CRC32C": 1, "Python interpreter": 1}
    assert ("kf_bulk_write (_records.cpython-311-x86_64-linux-gnu.so)", 1) in prof["self"]


def test_kinds_of_work_and_cython_names():
    assert kind_of_work("memcg_charge", "[kernel.kallsyms]",
                        ("memcg_charge", "do_anonymous_page", "exc_page_fault")) \
        == "kernel: page faults (first touch of fresh memory)"
    assert kind_of_work("futex_wake", "[kernel.kallsyms]", ("futex_wake", "__x64_sys_futex")) \
        == "kernel: futex (thread hand-offs, interpreter lock)"
    assert kind_of_work("something", "[kernel.kallsyms]") == "kernel: other"
    assert kind_of_work("__memmove_avx512_unaligned_erms", "/lib/libc.so.6") \
        == "libc: memcpy/memmove/memset"
    assert kind_of_work("_int_malloc", "/lib/libc.so.6") == "libc: malloc/free"
    assert kind_of_work("LZ4_compress_fast", "/lib/liblz4.so.1") == "compression"
    assert kind_of_work("PyArray_Repeat", "/np/_multiarray_umath.cpython-311.so") == "numpy"
    assert kind_of_work("x", "/usr/lib/libfoo.so") == "other (libfoo.so)"
    assert cython_name("__pyx_pw_10kafka_fast_7_native_8_records_5encode_batch") \
        == "_records.encode_batch"
    assert cython_name("__pyx_f_10kafka_fast_7_native_10_partition__choose") \
        == "_partition._choose"
    assert cython_name("kf_bulk_write") == "kf_bulk_write"


def test_render_shows_cpu_shares_in_cpu_seconds_and_the_python_view():
    perf = summarize_perf(PERF_G)
    text = render({"kafka_fast.produce_batch": {"perf": perf, "cpu_per_million": 0.2,
                                                "pyspy": summarize(RAW)}},
                  {"broker": "Tansu", "records": 1000, "size": 100, "key_size": 10,
                   "partitions": 6, "compression": "none", "commit": "abc", "machine": "cpu"})
    assert "CPU: 5 samples, 0.200 CPU s per million records." in text
    assert "| `CRC32C` | 20.0% | 0.040 |" in text
    assert "| `client threads (I/O, encoders)` | 60.0% | 0.120 |" in text
    assert "69 samples of running threads (49 of waiting threads and 57 in imports" in text
    assert "| `main (worker.py)` | 63.8% |" in text


STAT = """\
# started on Fri Nov 27 18:49:02 2026

1217,,syscalls:sys_enter_futex,100.00,,
1060,,context-switches,100.00,,
"""


def test_perf_stat_counts_are_read_and_a_missing_count_refused():
    assert parse_stat(STAT) == {"futex": 1217.0, "switches": 1060.0}
    with pytest.raises(SystemExit, match="could not count syscalls:sys_enter_futex"):
        parse_stat("<not supported>,,syscalls:sys_enter_futex,0,,\n")
    with pytest.raises(SystemExit, match=r"no count of \['switches'\]"):
        parse_stat("5,,syscalls:sys_enter_futex,100.00,,\n")


def test_the_lock_table_sets_each_case_before_and_after():
    perf = summarize_perf(PERF_G)
    after = {"perf": perf, "cpu_per_million": 0.2, "stat": {"futex": 833.0, "switches": 777.0}}
    before = {"cpu_per_million": 0.3, "stat": {"futex": 40_000.0, "switches": 9_000.0}}
    text = render({"kafka_fast.produce_batch": {**after, "before": before}},
                  {"broker": "Tansu", "records": 1000, "size": 100, "key_size": 10,
                   "partitions": 6, "compression": "none", "commit": "abc", "machine": "cpu",
                   "before": "base"})
    assert "| kafka_fast.produce_batch | `base` (before) | 0.300 |  | 40,000 | 9,000 |" in text
    assert "| kafka_fast.produce_batch | `abc` | 0.200 | 0.0% | 833 | 777 |" in text


#: a worker stand-in: two threads take turns on the interpreter lock while perf counts
CONTENDED = textwrap.dedent("""
    import json, threading
    from kafka_fast.bench.result import perf_control
    def spin():
        total = 0
        for i in range(300_000):
            total += i
    perf_control("enable")
    threads = [threading.Thread(target=spin) for _ in range(2)]
    for t in threads: t.start()
    for t in threads: t.join()
    perf_control("disable")
    print("RESULT " + json.dumps({"records": 1000, "cpu_s": 0.1}))
""")


def test_perf_stat_counts_the_hand_offs_of_the_measured_span_only():
    perf = shutil.which("perf")
    if perf is None:
        missing("perf")
    counts, stdout = run_stat(perf, [sys.executable, "-c", CONTENDED])
    idle, _ = run_stat(perf, [sys.executable, "-c", CONTENDED.replace(
        'perf_control("enable")', 'perf_control("disable")')])
    assert stdout.startswith("RESULT ")
    # two threads spinning under one interpreter lock hand it over every switch interval
    assert counts["futex"] > 10 and counts["switches"] > 5, counts
    # a span never enabled counts nothing of what the threads did
    assert idle["futex"] < counts["futex"] / 5, (idle, counts)


ANNOTATED = """\
   42,590,273 ( 4.85%)  kafka_fast/_native/_records.c:__pyx_pw_10kafka_fast_7_native_8_records_3encode_batch [/w/_records.so]
   31,749,520 ( 3.61%)  kafka_fast/_native/_records.c:__pyx_pw_10kafka_fast_7_native_8_records_11RecordBatch_9columns [/w/_records.so]
   24,042,127 ( 2.74%)  /w/kafka_fast/_native/csrc/kf_records.c:kf_bulk_write
   20,342,144 ( 2.31%)  kafka_fast/_native/csrc/kf_records.h:kf_bulk_write
    3,700,214 ( 0.42%)  kafka_fast/_native/_records.c:__pyx_pw_10kafka_fast_7_native_8_records_7decode_batches [/w/_records.so]
        6 ( 0.00%)  int64_t kf_bulk_size(const kf_bulk *b) {
"""


def test_callgrind_counts_take_each_functions_largest_entry_per_record():
    counts = callgrind_counts(ANNOTATED)
    assert counts["kf_bulk_write"] == 24_042_127
    assert "kf_bulk_size" not in counts  # a source line, not a function entry
    rows = dict(callgrind_rows(counts, 100_000))
    assert rows == {
        "encode_batch: lists of bytes to one record batch, CRC32C included": 425.90273,
        "  of which writing the records (kf_bulk_write)": 240.42127,
        "decode_batches: batch header and CRC32C check": 37.00214,
        "RecordBatch.columns: records into key/value/offset columns": 317.4952}
    text = render({}, {"broker": "Tansu", "records": 1000, "size": 100, "key_size": 10,
                       "partitions": 6, "compression": "none", "commit": "abc", "machine": "cpu",
                       "instructions": callgrind_rows(counts, 100_000),
                       "instruction_records": 100_000})
    assert "| encode_batch: lists of bytes to one record batch, CRC32C included | 426 |" in text
