"""The streaming benchmark's Slack scenario, in a small run."""

from __future__ import annotations

from bench.slack_streams import SlackStreamingConfig, run_slack_streaming, slack_table


async def test_both_modes_land_every_answer_without_429s_and_native_writes_no_updates() -> None:
    config = SlackStreamingConfig(
        streams=(2,), tokens=(30, 40), rate=(60.0, 80.0), stagger=0.2, answers=4
    )

    native, update = await run_slack_streaming(config)

    assert (native.mode, update.mode) == ("native", "chat.update")
    for cell in (native, update):
        assert cell.runs == 2 and cell.exact == 4 and cell.rate_limited == 0 and cell.finished
        assert cell.stale_seconds and cell.first_visible
    assert native.by_method["chat.startStream"] == 4 and "chat.update" not in native.by_method
    assert update.by_method["chat.postMessage"] == 4 and "chat.startStream" not in update.by_method
    assert "native" in slack_table([native, update], config).render()
