"""What users are told when genbot or the provider fails is said in their language: the fixed
texts are catalog texts, and a provider error with values is translated before it is filled."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from babel.messages.catalog import Catalog
from babel.messages.mofile import write_mo

from bot.api.errors import ContextTooLong, ModelNotAllowed, ProviderRateLimited, ServerError
from bot.kernel import (
    CommandNames,
    StorageError,
    i18n,
    provider_text,
    speaking,
    storage_failure_text,
)

GERMAN = {
    "The conversation is too long for {model}, even after genbot left out its older turns. "
    "Start a new conversation, or shorten your message.": "Das Gespräch ist zu lang für {model}.",
    "The provider is rate-limiting genbot; try again in about {amount} s.": (
        "Der Anbieter bremst genbot; in etwa {amount} s erneut versuchen."
    ),
    "The service is having trouble right now. Please try again later.": (
        "Der Dienst hat gerade Probleme."
    ),
    "genbot can't reach its database; try again in a moment.": (
        "genbot erreicht seine Datenbank nicht."
    ),
}


@pytest.fixture
def german(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A German catalog holding :data:`GERMAN`, in place of the repository's."""
    catalog = Catalog(locale="de", domain=i18n.DOMAIN)
    for english, german in GERMAN.items():
        catalog.add(english, german)
    folder = tmp_path / "de" / "LC_MESSAGES"
    folder.mkdir(parents=True)
    with (folder / f"{i18n.DOMAIN}.mo").open("wb") as file:
        write_mo(file, catalog)
    monkeypatch.setattr(i18n, "LOCALES", tmp_path)
    i18n._translations.cache_clear()
    yield
    i18n._translations.cache_clear()


def test_a_provider_error_with_values_is_translated_then_filled(german: None) -> None:
    too_long = ContextTooLong("llm-4")
    with speaking("de"):
        assert provider_text(too_long) == "Das Gespräch ist zu lang für llm-4."
        assert provider_text(ProviderRateLimited(40)) == (
            "Der Anbieter bremst genbot; in etwa 40 s erneut versuchen."
        )
        assert provider_text(ServerError(502)) == "Der Dienst hat gerade Probleme."
    assert provider_text(too_long) == too_long.user_message
    assert too_long.user_message.startswith("The conversation is too long for llm-4, even")


def test_the_fixed_failure_texts_are_said_in_the_language_spoken(german: None) -> None:
    with speaking("de"):
        assert storage_failure_text(StorageError("connection refused")) == (
            "genbot erreicht seine Datenbank nicht."
        )
    assert storage_failure_text(StorageError("connection refused")) == (
        "genbot can't reach its database; try again in a moment."
    )


def test_a_provider_error_names_the_settings_command_as_the_readers_platform_does() -> None:
    refused = ModelNotAllowed("llm-4", "free")
    assert "Pick another model with `/settings`, or" in refused.user_message
    with speaking("en", names=lambda: CommandNames(mentions={"settings": "</settings:7>"})):
        assert "Pick another model with </settings:7>, or" in provider_text(refused)
