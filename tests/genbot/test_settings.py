"""The settings scheme: TOML file, environment overrides, secrets hidden."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from adapters.discord.settings import DiscordSettings
from adapters.slack.settings import SlackSettings
from bot.api.settings import KeySettings
from bot.kernel import CoreSettings, KeepDays, TierSettings
from genbot.settings import Settings, load_settings, resolve_config_path

EXAMPLE = Path(__file__).resolve().parents[2] / "config" / "genbot.example.toml"


def documented_keys(text: str) -> dict[str, set[str]]:
    """Keys per section, counting optional keys shown commented out (``# key = value``); the
    keys of an array of tables (``# [[api.keys]]``) or of a table (``[storage.keep_days]``) are
    the section ``api.keys``, and it documents its section's key ``keys``."""
    sections: dict[str, set[str]] = {}
    current: set[str] = set()
    for line in text.splitlines():
        if match := re.fullmatch(r"\[(\w+)\]", line.strip()):
            current = sections.setdefault(match[1], set())
        elif match := re.fullmatch(r"#? ?\[?\[(\w+)\.(\w+)\]\]?", line.strip()):
            sections.setdefault(match[1], set()).add(match[2])
            current = sections.setdefault(f"{match[1]}.{match[2]}", set())
        elif match := re.match(r"#? ?(\w+) = ", line):
            current.add(match[1])
    return sections


def test_example_file_documents_every_key() -> None:
    documented = documented_keys(EXAMPLE.read_text())
    tables = {name for name in documented if "." in name}
    assert set(documented) - tables == set(Settings.model_fields)
    assert documented["quotas.tiers"] == set(TierSettings.model_fields)
    for section_name, section_field in Settings.model_fields.items():
        section_model = section_field.annotation
        assert isinstance(section_model, type)
        assert documented[section_name] == set(section_model.model_fields), section_name
    assert tables == {"api.keys", "quotas.tiers", "storage.keep_days"}
    assert documented["storage.keep_days"] == set(KeepDays.model_fields)
    assert documented["api.keys"] == set(KeySettings.model_fields)


def test_example_file_loads() -> None:
    settings = load_settings(EXAMPLE)
    assert settings.api.key.get_secret_value() == "sim-key"
    assert settings.limits.max_concurrent_jobs_per_user == 3


def test_environment_overrides_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "genbot.toml"
    config.write_text('[api]\nbase_url = "http://file"\nkey = "from-file"\n')
    monkeypatch.setenv("GENBOT_API__KEY", "from-env")
    monkeypatch.setenv("GENBOT_STORAGE__PATH", str(tmp_path / "x.db"))
    monkeypatch.setenv("GENBOT_API__BACKUP_URLS", '["http://b1", "http://b2"]')
    settings = load_settings(config)
    assert settings.api.base_url == "http://file"
    assert settings.api.key.get_secret_value() == "from-env"
    assert settings.api.backup_urls == ["http://b1", "http://b2"]
    assert settings.storage.path == tmp_path / "x.db"


def test_config_path_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GENBOT_CONFIG", raising=False)
    assert resolve_config_path(None) is None
    (tmp_path / "genbot.toml").write_text("")
    assert resolve_config_path(None) == Path("genbot.toml")
    monkeypatch.setenv("GENBOT_CONFIG", str(tmp_path / "env.toml"))
    assert resolve_config_path(None) == tmp_path / "env.toml"
    assert resolve_config_path("explicit.toml") == Path("explicit.toml")


def test_missing_explicit_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="not found"):
        load_settings(tmp_path / "nope.toml")


def test_unknown_key_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "genbot.toml"
    config.write_text('[api]\nbase_ulr = "typo"\n')
    with pytest.raises(ValidationError, match="base_ulr"):
        load_settings(config)


def test_secrets_never_printed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GENBOT_API__KEY", "sk-very-secret")
    monkeypatch.setenv("GENBOT_DISCORD__TOKEN", "discord-very-secret")
    monkeypatch.setenv("GENBOT_SLACK__SIGNING_SECRET", "slack-very-secret")
    settings = load_settings(None)
    shown = repr(settings) + str(settings) + settings.model_dump_json()
    for secret in ("sk-very-secret", "discord-very-secret", "slack-very-secret"):
        assert secret not in shown


@pytest.mark.parametrize(
    "variable", ["GENBOT_WEB__PORT", "GENBOT_WEBHOOK__PORT", "GENBOT_SLACK__HTTP_PORT"]
)
def test_ports_out_of_range_are_refused_when_loading(
    variable: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(variable, "70000")
    with pytest.raises(ValidationError, match="65535"):
        load_settings(None)


def test_the_core_settings_hold_no_platform_section() -> None:
    assert not {"discord", "slack", "web"} & set(CoreSettings.model_fields)
    assert {"discord", "slack", "web"} <= set(Settings.model_fields)


def test_platform_keys_of_an_earlier_limits_section_are_read_into_their_sections(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "genbot.toml"
    config.write_text(
        "[limits]\ndiscord_edits_per_window = 3\nslack_updates_per_minute = 20\n"
        "max_concurrent_jobs_per_user = 2\n[slack]\nupdates_per_minute = 40\n"
    )
    monkeypatch.setenv("GENBOT_LIMITS__DISCORD_EDIT_WINDOW_SECONDS", "7")
    settings = load_settings(config)
    assert settings.discord.edits_per_window == 3
    assert settings.discord.edit_window_seconds == 7.0
    assert settings.slack.updates_per_minute == 40, "the section's own value wins"
    assert settings.limits.max_concurrent_jobs_per_user == 2
    limits = settings.discord.platform_profile()
    assert (limits.edits_per_window_per_channel, limits.edit_window_seconds) == (3, 7.0)


def test_open_channels_come_from_the_adapters_sections() -> None:
    settings = Settings(
        discord=DiscordSettings(open_channel_ids=[12, 34]),
        slack=SlackSettings(open_channel_ids=["C1"]),
    )
    assert settings.open_channels() == {
        "discord": frozenset({"12", "34"}),
        "slack": frozenset({"C1"}),
    }
