"""The timeout of each broker's next Fetch: doubled after one timed out, kept while answers
stay slow, back to the configured one once they are quick."""

from kafka_fast.consumer.fetch_timeouts import MAX_FETCH_TIMEOUT_MS, FetchTimeouts


def test_a_timed_out_fetch_doubles_the_next_ones_allowance_up_to_the_cap():
    t = FetchTimeouts(30_500)
    assert (t.timeout_ms(1), t.timeout_ms(2)) == (30_500, 30_500)
    t.timed_out(1)
    assert (t.timeout_ms(1), t.timeout_ms(2)) == (61_000, 30_500)
    for _ in range(5):
        t.timed_out(1)
    assert t.timeout_ms(1) == MAX_FETCH_TIMEOUT_MS


def test_slow_answers_keep_the_allowance_and_quick_ones_restore_the_configured_one():
    t = FetchTimeouts(1_100)
    t.timed_out(3)
    t.timed_out(3)
    assert t.timeout_ms(3) == 4_400
    t.answered(3, 1.5)  # twice that is still below the allowance: 3 s
    assert t.timeout_ms(3) == 3_000
    t.answered(3, 2.0)  # never above what was allowed
    assert t.timeout_ms(3) == 3_000
    t.answered(3, 0.2)
    assert t.timeout_ms(3) == 1_100
    t.answered(4, 9.0)  # answered in time at the configured timeout: nothing changes
    assert t.timeout_ms(4) == 1_100
