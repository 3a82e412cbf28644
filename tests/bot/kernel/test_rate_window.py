"""A sliding rate window per key (bot/kernel/rate_window.py): the limit holds in any window,
refused actions are not counted, the wait is until the oldest counted action leaves the
window, and only the newest keys are remembered."""

from __future__ import annotations

from bot.kernel import RateWindow


def test_at_most_the_limit_in_any_window_and_a_refusal_is_not_counted() -> None:
    now = [100.0]
    rate = RateWindow(2, 10.0, monotonic=lambda: now[0])
    assert [rate.allow("a"), rate.allow("a"), rate.allow("a")] == [True, True, False]
    assert rate.allow("b")
    now[0] = 104.0
    assert not rate.allow("a")
    assert rate.retry_after("a") == 6.0
    now[0] = 110.0
    assert rate.retry_after("a") == 0.0
    assert [rate.allow("a"), rate.allow("a"), rate.allow("a")] == [True, True, False], (
        "the refusals at 100 and 104 were not counted"
    )


def test_only_the_newest_keys_are_remembered() -> None:
    rate = RateWindow(1, 60.0, max_keys=2, monotonic=lambda: 0.0)
    assert rate.allow("a") and rate.allow("b")
    assert not rate.allow("a"), "a is remembered (and now the newest)"
    assert rate.allow("c")
    assert rate.allow("b"), "b, the least recently seen, was forgotten"
