"""What a provider's error answer means, and its own words in whatever shape it sends them."""

from __future__ import annotations

from bot.api.statuses import error_for_status, provider_message


def test_the_providers_words_are_read_from_any_common_error_shape() -> None:
    # docs/provider.md#error-body: the documentation does not show the error body.
    shapes: list[object] = [
        {"message": "bad width"},
        {"messege": "bad width"},
        {"error": "bad width"},
        {"error": {"message": "bad width"}},
        {"detail": "bad width"},
        {"msg": "bad width"},
    ]
    assert [provider_message(shape) for shape in shapes] == ["bad width"] * len(shapes)
    assert provider_message(None, b"plain words\nover lines") == "plain words over lines"
    assert len(provider_message({"message": "x" * 1000})) == 300
    assert provider_message({"code": 400}) == ""
    refusal = error_for_status(400, b'{"detail": "bad width"}')
    assert refusal.user_message == "The service refused the request: bad width"
