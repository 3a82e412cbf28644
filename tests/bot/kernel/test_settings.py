"""The core's settings refuse, at load, a number that would quietly mean something else (a
negative cap read as "no cap", a timeout of ``inf``) or that every request would be refused for,
and a chat model the provider does not have."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from bot.kernel import (
    ApiSettings,
    ChatSettings,
    LimitsSettings,
    ModerationSettings,
    OpsSettings,
    PromptsSettings,
    QuotasSettings,
    TierSettings,
)


def refused(section: type[Any], **values: Any) -> list[tuple[tuple[int | str, ...], str]]:
    """Where and why building ``section`` from ``values`` is refused."""
    with pytest.raises(ValidationError) as error:
        section(**values)
    return [(details["loc"], details["msg"]) for details in error.value.errors()]


@pytest.mark.parametrize("key", ["max_concurrent_jobs_per_user", "daily_credit_budget_per_user"])
def test_a_negative_cap_or_budget_is_refused_and_zero_is_no_limit(key: str) -> None:
    assert refused(LimitsSettings, **{key: -1}) == [
        ((key,), "Input should be greater than or equal to 0")
    ]
    assert getattr(LimitsSettings.model_validate({key: 0}), key) == 0


def test_the_shortest_poll_interval_is_no_longer_than_the_longest() -> None:
    assert refused(LimitsSettings, poll_interval_min=10, poll_interval_max=1) == [
        (("poll_interval_max",), "Input should be at least poll_interval_min (10)")
    ]
    assert refused(LimitsSettings, poll_interval_max=0.5) == [
        (("poll_interval_max",), "Input should be at least poll_interval_min (1)")
    ]
    same = LimitsSettings(poll_interval_min=5, poll_interval_max=5)
    assert (same.poll_interval_min, same.poll_interval_max) == (5, 5)


@pytest.mark.parametrize(
    ("section", "key", "value"),
    [
        (LimitsSettings, "poll_interval_min", 0),
        (LimitsSettings, "job_timeout_seconds", 0),
        (LimitsSettings, "job_timeout_seconds", -60),
        (LimitsSettings, "max_upload_bytes", 0),
        (ApiSettings, "connect_timeout", 0),
        (ApiSettings, "read_timeout", -1),
        (ApiSettings, "stream_idle_timeout", 0),
        (ChatSettings, "temperature", 2.5),
        (ChatSettings, "temperature", -0.1),
        (ChatSettings, "top_p", 1.5),
        (ChatSettings, "presence_penalty", -3),
        (ChatSettings, "frequency_penalty", 2.1),
        (ChatSettings, "max_tokens", 0),
        (ChatSettings, "answer_reserve", -1024),
        (ChatSettings, "max_function_rounds", -1),
    ],
)
def test_a_number_out_of_its_range_is_refused(section: type[Any], key: str, value: float) -> None:
    [(where, _)] = refused(section, **{key: value})
    assert where == (key,)


def test_the_chat_defaults_keep_the_rules_every_request_is_held_to() -> None:
    assert [where for where, _ in refused(ChatSettings, stop=["a", "b", "c", "d", "e"])] == [
        ("stop",)
    ]
    assert [where for where, _ in refused(ChatSettings, stop=["END", ""])] == [("stop", 1)]
    biased = refused(ChatSettings, logit_bias={"50256": -500, "hello": 1, "²": 1})
    assert {where for where, _ in biased} == {
        ("logit_bias", "50256"),
        ("logit_bias", "hello", "[key]"),
        ("logit_bias", "²", "[key]"),
    }, "a token id is ASCII digits, its bias -100 to 100"
    chat = ChatSettings(
        temperature=0, top_p=1, presence_penalty=-2, frequency_penalty=2, max_tokens=1,
        stop=["a", "b", "c", "d"], logit_bias={"50256": -100, "1734": 100},
        answer_reserve=1, max_function_rounds=0,
    )  # fmt: skip
    assert chat.logit_bias == {"50256": -100, "1734": 100}


@pytest.mark.parametrize("value", ["inf", "-inf", "nan", float("inf"), float("nan")])
@pytest.mark.parametrize(
    ("section", "key"),
    [
        (LimitsSettings, "poll_interval_min"),
        (LimitsSettings, "poll_interval_max"),
        (LimitsSettings, "job_timeout_seconds"),
        (LimitsSettings, "progress_tick_seconds"),
        (ApiSettings, "connect_timeout"),
        (ApiSettings, "read_timeout"),
        (ApiSettings, "stream_idle_timeout"),
        (ApiSettings, "rate_limit_max_wait"),
        (ApiSettings, "key_out_seconds"),
        (OpsSettings, "probe_interval_seconds"),
        (ChatSettings, "temperature"),
    ],
)
def test_a_number_that_is_not_finite_is_refused(
    section: type[Any], key: str, value: str | float
) -> None:
    assert refused(section, **{key: value}) == [((key,), "Input should be a finite number")]


def test_a_bias_that_is_not_finite_is_refused() -> None:
    assert refused(ChatSettings, logit_bias={"50256": "nan"}) == [
        (("logit_bias", "50256"), "Input should be a finite number")
    ]


def test_a_chat_model_is_one_the_provider_has() -> None:
    [(where, why)] = refused(ChatSettings, model="llm-5")
    assert where == ("model",)
    assert why.startswith("Input should be a chat model genbot knows: llm-3.5-turbo, ")
    assert why.endswith(", llm-4-vision-preview")
    assert ChatSettings(model="llm-4-1106-preview").model == "llm-4-1106-preview"


@pytest.mark.parametrize(
    ("section", "key"),
    [(ModerationSettings, "model_check_model"), (PromptsSettings, "translate_model")],
)
def test_a_model_for_checks_is_empty_or_a_chat_model(section: type[Any], key: str) -> None:
    [(where, why)] = refused(section, **{key: "gpt-4"})
    assert where == (key,)
    assert why.startswith("Input should be empty (to use [chat] model) or a chat model")
    assert getattr(section.model_validate({key: ""}), key) == ""
    assert getattr(section.model_validate({key: "llm-4"}), key) == "llm-4"


def test_a_tiers_llm_model_is_a_chat_model_and_any_other_a_checkpoint() -> None:
    tiers = [{"name": "patrons", "models": ["llm-4", "llm-4-turbo", "sd-xl-1.0"]}]
    [(where, why)] = refused(QuotasSettings, tiers=tiers)
    assert where == ("tiers", 0, "models", 1)
    assert why.startswith("Input should be a chat model genbot knows: ")
    tier = TierSettings(name="t", models=["llm-3.5-turbo", "sd-xl-1.0", "anything"])
    assert tier.models == ["llm-3.5-turbo", "sd-xl-1.0", "anything"]
