"""Sealing the secrets kept in the database: a vetted cipher (Fernet) under a key from the
settings, older keys accepted for opening, plain values from before sealing still read."""

from __future__ import annotations

import pytest
from pydantic import SecretStr, ValidationError

from bot.kernel import (
    SEALED_PREFIX,
    ApiSettings,
    Opened,
    Sealer,
    SealError,
    StorageSettings,
    is_sealed,
    sealer_of,
)

KEY = "k" * 32
OLD_KEY = "o" * 32
API_KEY = "sk-provider-key"


def test_a_sealed_secret_opens_with_its_key_and_shows_nothing_of_itself() -> None:
    sealer = Sealer([KEY])

    sealed = sealer.seal("xoxb-the-token")

    assert is_sealed(sealed) and sealed.startswith(SEALED_PREFIX)
    assert "xoxb" not in sealed and sealed != sealer.seal("xoxb-the-token")
    assert (sealer.open(sealed).secret, sealer.open(sealed).stale) == ("xoxb-the-token", False)


def test_an_older_key_still_opens_and_says_the_value_should_be_sealed_again() -> None:
    sealed = Sealer([OLD_KEY]).seal("secret")
    rotated = Sealer([KEY, OLD_KEY])

    opened = rotated.open(sealed)
    again = rotated.seal(opened.secret)

    assert (opened.secret, opened.stale) == ("secret", True)
    assert Sealer([KEY]).open(again).secret == "secret"


def test_a_plain_value_from_before_sealing_is_read_as_it_is() -> None:
    opened = Sealer([KEY]).open("plain-webhook-secret")

    assert (opened.secret, opened.stale) == ("plain-webhook-secret", True)


def test_a_key_that_did_not_seal_the_value_refuses_it_and_says_what_to_do() -> None:
    sealed = Sealer([OLD_KEY]).seal("secret")

    with pytest.raises(SealError, match=r"secret_key_previous"):
        Sealer([KEY]).open(sealed)
    with pytest.raises(SealError, match=r"secret_key_previous"):
        Sealer([KEY]).open(SEALED_PREFIX + "not-a-token")


def test_without_any_key_nothing_is_sealed() -> None:
    with pytest.raises(SealError, match=r"\[storage\] secret_key"):
        Sealer(["", ""]).seal("secret")


def test_the_settings_seal_with_secret_key_else_with_a_key_derived_from_the_api_key() -> None:
    api = ApiSettings(key=SecretStr(API_KEY))
    derived = sealer_of(StorageSettings(), api)
    configured = sealer_of(StorageSettings(secret_key=SecretStr(KEY)), api)
    rotated = sealer_of(
        StorageSettings(secret_key=SecretStr(KEY), secret_key_previous=SecretStr(OLD_KEY)),
        ApiSettings(key=SecretStr("sk-a-new-provider-key")),
    )

    sealed_before_secret_key = derived.seal("a")
    sealed_with_secret_key = configured.seal("b")

    assert configured.open(sealed_before_secret_key) == Opened("a", stale=True)
    assert Sealer([KEY]).open(sealed_with_secret_key).secret == "b"
    assert rotated.open(Sealer([OLD_KEY]).seal("c")).secret == "c"
    with pytest.raises(SealError):
        rotated.open(sealed_before_secret_key)


def test_a_short_secret_key_is_refused_with_a_way_to_make_one() -> None:
    with pytest.raises(ValidationError, match="at least 32 characters"):
        StorageSettings(secret_key=SecretStr("short"))
