"""What a provider's error answer means, and its own words in whatever shape it sends them."""

from __future__ import annotations

import json

from bot.api import ServerError, UnexpectedStatus
from bot.api.statuses import error_for_status, parse_json, provider_message


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


def test_a_body_parses_as_json_reads_it() -> None:
    bodies = [
        b'{"code": 200, "data": {"t1": {"status": "pending", "meta": null}}, "message": "success"}',
        b'  [1, 2.5, -0, 1e400, 123456789012345678901234567890, true, null, "\\u00e9"]  ',
        b'{"a": 1, "a": 2}',
        b'"\\ud800"',
        b"\xef\xbb\xbf{}",
        '{"x": "\u00e9"}'.encode("utf-16"),
    ]
    for body in bodies:
        assert parse_json(body) == json.loads(body), body
    for unreadable in (b"", b"  ", b"{} x", b'{"x": "\xff"}', b"<html>"):
        assert parse_json(unreadable) is None, unreadable


def test_only_the_5xx_statuses_are_server_errors() -> None:
    # A status past 599 is no HTTP status at all: told as undocumented, not as server trouble.
    assert isinstance(error_for_status(503, b""), ServerError)
    odd = error_for_status(600, b"")
    assert isinstance(odd, UnexpectedStatus) and odd.status == 600
