"""Every problem a user can fix ends as one ``Error:`` line (exit status 1, or 2 for a bad option),
never a traceback, and never shows a configured value (it may be a secret)."""

from __future__ import annotations

import contextlib
import os
import re
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from adapters.slack.installations import InstallationStore
from bot.kernel import Sealer
from genbot.cli import main
from genbot.demo import free_port
from storage import SqliteStore
from tests.genbot.process import clean_env, genbot
from tests.genbot.stubs import discord_refuses_the_token, slack_refuses_the_token, stub_server

SLACK_TOKEN = "xoxb-never-print-this-token"
DISCORD_TOKEN = "discord.never-print-this-token"


def invoke(*args: str, env: dict[str, str] | None = None, cwd: Path) -> Result:
    """``genbot *args`` in-process, in ``cwd``, without the developer's ``GENBOT_*`` settings."""
    unset: dict[str, str | None] = {key: None for key in os.environ if key.startswith("GENBOT_")}
    unset["TIKTOKEN_CACHE_DIR"] = None
    with contextlib.chdir(cwd):
        return CliRunner().invoke(main, list(args), env={**unset, **(env or {})})


def error_lines(result: Result) -> list[str]:
    return [line for line in result.output.splitlines() if line.startswith("Error:")]


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A port on 127.0.0.1 something listens on."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        yield int(taken.getsockname()[1])


# Startup ----------------------------------------------------------------------------------------


async def test_a_slack_token_slack_refuses_is_one_line(tmp_path: Path) -> None:
    async with stub_server(slack_refuses_the_token) as slack:
        env = clean_env(
            {
                "GENBOT_SLACK__BOT_TOKEN": SLACK_TOKEN,
                "GENBOT_SLACK__SIGNING_SECRET": "signing-secret",
                "GENBOT_SLACK__API_URL": f"{slack.url}/api/",
                "GENBOT_STORAGE__PATH": str(tmp_path / "genbot.db"),
            }
        )
        async with genbot("run", env=env, cwd=tmp_path, log=tmp_path / "run.log") as run:
            status = await run.exit_status()

    assert status == 1
    assert slack.paths == ["/api/auth.test"]
    assert re.fullmatch(r"Error: .*slack.*invalid_auth.*", run.error_line(), re.IGNORECASE)
    assert "Traceback" not in run.errors() and SLACK_TOKEN not in run.errors()
    assert run.printed == []


async def test_a_key_that_does_not_open_the_stored_slack_tokens_is_one_line(
    tmp_path: Path,
) -> None:
    """A distributed Slack app's tokens were sealed with one key; started with another, genbot
    stops at once, saying which setting keeps the old key."""
    first, second = "first-key-0123456789-0123456789-01", "second-key-0123456789-0123456789-0"
    async with await SqliteStore.open(tmp_path / "genbot.db") as store:
        await InstallationStore(store.installations, Sealer([first])).check_key()
    env = clean_env(
        {
            "GENBOT_SLACK__CLIENT_ID": "1.2",
            "GENBOT_SLACK__CLIENT_SECRET": "client-secret-0123",
            "GENBOT_SLACK__SIGNING_SECRET": "signing-secret",
            "GENBOT_SLACK__API_URL": f"http://127.0.0.1:{free_port()}/api/",
            "GENBOT_SLACK__HTTP_PORT": "0",
            "GENBOT_API__KEY": "sk-provider-key",
            "GENBOT_STORAGE__PATH": str(tmp_path / "genbot.db"),
            "GENBOT_STORAGE__SECRET_KEY": second,
        }
    )
    async with genbot("run", env=env, cwd=tmp_path, log=tmp_path / "run.log") as run:
        status = await run.exit_status()

    assert status == 1
    assert re.fullmatch(
        r"Error: the Slack installations cannot be read: a secret in the database was sealed "
        r"with a key genbot does not have: .*\[storage\] secret_key_previous.*",
        run.error_line(),
    ), run.errors()
    assert "Traceback" not in run.errors() and second not in run.errors()


async def test_a_discord_token_discord_refuses_is_one_line(tmp_path: Path) -> None:
    async with stub_server(discord_refuses_the_token) as discord:
        env = clean_env(
            {
                "GENBOT_DISCORD__TOKEN": DISCORD_TOKEN,
                "GENBOT_DISCORD__API_BASE": f"{discord.url}/api/v10",
                "GENBOT_DISCORD__GATEWAY_URL": "ws://127.0.0.1:9/",
                "GENBOT_STORAGE__PATH": str(tmp_path / "genbot.db"),
            }
        )
        async with genbot("run", env=env, cwd=tmp_path, log=tmp_path / "run.log") as run:
            status = await run.exit_status()

    assert status == 1
    assert discord.paths[0] == "/api/v10/users/@me"
    assert re.fullmatch(r"Error: .*(discord|token).*", run.error_line(), re.IGNORECASE)
    assert "Traceback" not in run.errors() and DISCORD_TOKEN not in run.errors()


async def test_a_busy_webhook_port_stops_what_started_and_is_one_line(
    tmp_path: Path, busy_port: int
) -> None:
    env = clean_env(
        {
            "GENBOT_WEB__ENABLED": "true",
            "GENBOT_WEB__PORT": str(free_port()),
            "GENBOT_WEBHOOK__PUBLIC_URL": f"http://127.0.0.1:{busy_port}",
            "GENBOT_WEBHOOK__PORT": str(busy_port),
            "GENBOT_WEBHOOK__ALLOW_INSECURE_LOOPBACK": "true",
            "GENBOT_STORAGE__PATH": str(tmp_path / "genbot.db"),
            "GENBOT_API__KEY": "sk-provider-key",
        }
    )
    async with genbot("run", env=env, cwd=tmp_path, log=tmp_path / "run.log") as run:
        status = await run.exit_status()

    assert status == 1
    assert run.error_line() == (
        f"Error: the webhook receiver cannot listen on 127.0.0.1:{busy_port} "
        "(Address already in use); choose another [webhook] port"
    )
    assert "Traceback" not in run.errors()
    assert "web adapter started" in run.errors()


async def test_sim_on_a_busy_port_is_one_line(tmp_path: Path, busy_port: int) -> None:
    args = ("sim", "--port", str(busy_port))
    async with genbot(*args, env=clean_env(), cwd=tmp_path, log=tmp_path / "sim.log") as sim:
        status = await sim.exit_status()

    assert status == 1
    assert sim.errors().splitlines() == [
        f"Error: the simulator cannot listen on 127.0.0.1:{busy_port} (Address already in use); "
        "choose another --port (or --host)"
    ]


@pytest.mark.parametrize(
    ("option", "value", "allowed"),
    [
        ("--fault-rate", "1.5", "0<=x<=1"),
        ("--fault-rate", "-0.1", "0<=x<=1"),
        ("--time-scale", "-1", "x>=0"),
        ("--credits", "-5", "x>=0"),
        ("--port", "70000", "0<=x<=65535"),
    ],
)
def test_sim_refuses_out_of_range_options(
    tmp_path: Path, option: str, value: str, allowed: str
) -> None:
    result = invoke("sim", option, value, cwd=tmp_path)
    assert result.exit_code == 2
    assert f"Invalid value for '{option}'" in result.output and allowed in result.output
    assert "listening" not in result.output


def test_demo_refuses_an_impossible_port(tmp_path: Path) -> None:
    result = invoke("demo", "--port", "70000", cwd=tmp_path)
    assert result.exit_code == 2 and "0<=x<=65535" in result.output


# Configuration ----------------------------------------------------------------------------------


def test_malformed_toml_is_one_line_naming_the_file_and_place(tmp_path: Path) -> None:
    config = tmp_path / "genbot.toml"
    config.write_text("[api\nkey = 'secret-in-a-broken-file'\n", encoding="utf-8")
    result = invoke("--config", str(config), "run", cwd=tmp_path)
    assert result.exit_code == 1
    assert error_lines(result) == [
        f"Error: {config} is not valid TOML: Expected ']' at the end of a table declaration "
        "(at line 1, column 5)"
    ]
    assert "secret-in-a-broken-file" not in result.output


def test_a_list_in_the_environment_that_is_not_json_names_the_variable(tmp_path: Path) -> None:
    result = invoke("run", env={"GENBOT_DISCORD__GUILD_IDS": "123,456"}, cwd=tmp_path)
    assert result.exit_code == 1
    [line] = error_lines(result)
    assert line.startswith("Error: GENBOT_DISCORD__GUILD_IDS: ")
    assert "JSON" in line and "[123, 456]" in line


@pytest.mark.parametrize(
    ("toml", "setting"),
    [
        ("[api]\nkey = 12345\n", "[api] key"),
        ("[discord]\ntoken = 987654321\n", "[discord] token"),
        ('[slack]\nsigning_secret = ["s3cr3t-value"]\n', "[slack] signing_secret"),
        ('[api]\nkey = "k"\nplan = "s3cr3t-plan"\n', "[api] plan"),
    ],
)
def test_invalid_values_are_named_never_shown(tmp_path: Path, toml: str, setting: str) -> None:
    config = tmp_path / "genbot.toml"
    config.write_text(toml, encoding="utf-8")
    result = invoke("--config", str(config), "doctor", cwd=tmp_path)
    assert result.exit_code == 1
    [line] = error_lines(result)
    assert line.startswith(f"Error: invalid configuration: {setting}: ")
    for value in ("12345", "987654321", "s3cr3t"):
        assert value not in result.output


def test_an_invalid_environment_value_names_its_variable(tmp_path: Path) -> None:
    result = invoke("doctor", env={"GENBOT_WEB__PORT": "eighty"}, cwd=tmp_path)
    assert result.exit_code == 1
    [line] = error_lines(result)
    assert line.startswith("Error: invalid configuration: [web] port (GENBOT_WEB__PORT): ")
    assert "eighty" not in result.output


def test_an_unknown_key_is_named(tmp_path: Path) -> None:
    config = tmp_path / "genbot.toml"
    config.write_text('[api]\nbase_ulr = "http://x"\n', encoding="utf-8")
    result = invoke("--config", str(config), "doctor", cwd=tmp_path)
    assert error_lines(result) == [
        "Error: invalid configuration: [api] base_ulr: Extra inputs are not permitted"
    ]


async def test_a_secret_in_a_startup_error_is_redacted(tmp_path: Path) -> None:
    nothing_listens = f"http://127.0.0.1:{free_port()}"
    env = clean_env(
        {
            "GENBOT_DISCORD__TOKEN": DISCORD_TOKEN,
            "GENBOT_DISCORD__API_BASE": f"{nothing_listens}/{DISCORD_TOKEN}/api/v10",
            "GENBOT_DISCORD__GATEWAY_URL": "ws://127.0.0.1:9/",
            "GENBOT_STORAGE__PATH": str(tmp_path / "genbot.db"),
        }
    )
    async with genbot("run", env=env, cwd=tmp_path, log=tmp_path / "run.log") as run:
        status = await run.exit_status()

    assert status == 1
    assert run.error_line().startswith("Error: ") and "[redacted]" in run.error_line()
    assert DISCORD_TOKEN not in run.errors() and "Traceback" not in run.errors()


@pytest.mark.parametrize(
    ("variable", "value", "setting"),
    [
        (
            "GENBOT_API__BASE_URL",
            "https://genbot:never-print-pw@api.example.com/",
            "[api] base_url",
        ),
        (
            "GENBOT_API__BACKUP_URLS",
            '["https://never-print-user@b.example.com"]',
            "[api] backup_urls[0]",
        ),
        (
            "GENBOT_WEBHOOK__PUBLIC_URL",
            "https://u:never-print-pw@hooks.example.com",
            "[webhook] public_url",
        ),
        (
            "GENBOT_SLACK__API_URL",
            "https://x:never-print-pw@slack.example.com/api/",
            "[slack] api_url",
        ),
    ],
)
def test_credentials_in_a_configured_address_are_refused_naming_the_setting(
    tmp_path: Path, variable: str, value: str, setting: str
) -> None:
    result = invoke("run", env={variable: value}, cwd=tmp_path)
    assert result.exit_code == 1
    [line] = error_lines(result)
    assert line.startswith(f"Error: invalid configuration: {setting} ({variable}): ")
    assert "holds credentials" in line
    assert "never-print" not in result.output


def invoke_with(toml: str, command: str, cwd: Path) -> Result:
    """``genbot --config genbot.toml command`` in ``cwd``, the file holding ``toml``."""
    config = cwd / "genbot.toml"
    config.write_text(toml, encoding="utf-8")
    return invoke("--config", str(config), command, cwd=cwd)


@pytest.mark.parametrize("command", ["run", "doctor"])
def test_a_negative_cap_or_budget_is_refused_naming_each(tmp_path: Path, command: str) -> None:
    toml = (
        "[limits]\nmax_concurrent_jobs_per_user = -1\n"
        "daily_credit_budget_per_user = -5\npoll_interval_min = 10\npoll_interval_max = 1\n"
    )
    result = invoke_with(toml, command, tmp_path)
    assert result.exit_code == 1
    assert error_lines(result) == [
        "Error: invalid configuration: "
        "[limits] max_concurrent_jobs_per_user: Input should be greater than or equal to 0; "
        "[limits] daily_credit_budget_per_user: Input should be greater than or equal to 0; "
        "[limits] poll_interval_max: Input should be at least poll_interval_min (10)"
    ]


@pytest.mark.parametrize("command", ["run", "doctor"])
def test_an_unknown_chat_model_or_an_endless_timeout_is_refused(
    tmp_path: Path, command: str
) -> None:
    toml = '[chat]\nmodel = "llm-5"\n[limits]\npoll_interval_max = inf\n[api]\nread_timeout = nan\n'
    result = invoke_with(toml, command, tmp_path)
    assert result.exit_code == 1
    assert error_lines(result) == [
        "Error: invalid configuration: "
        "[api] read_timeout: Input should be a finite number; "
        "[chat] model: Input should be a chat model genbot knows: llm-3.5-turbo, "
        "llm-3.5-turbo-0301, llm-3.5-turbo-0613, llm-3.5-turbo-16k, llm-3.5-turbo-16k-0613, "
        "llm-3.5-turbo-1106, llm-4, llm-4-0613, llm-4-1106-preview, llm-4-vision-preview; "
        "[limits] poll_interval_max: Input should be a finite number"
    ]


@pytest.mark.parametrize("command", ["run", "doctor"])
def test_a_configured_pattern_re2_does_not_run_is_refused_as_written(
    tmp_path: Path, command: str
) -> None:
    toml = (
        '[moderation]\npatterns = { gore = ["decapitat\\\\w*"], '
        'x = ["(unclosed"], nsfw = ["Nude(?=S)"] }\n'
    )
    result = invoke_with(toml, command, tmp_path)
    assert result.exit_code == 1
    [line] = error_lines(result)
    assert line.startswith(
        "Error: invalid configuration: [moderation] patterns: category 'x', pattern '(unclosed': "
        "not a regular expression: missing ): (unclosed; category 'nsfw', pattern 'Nude(?=S)': "
        "genbot runs patterns on RE2"
    )
    assert line.endswith("(RE2 says: invalid perl operator: (?=)")
    assert "decapitat" not in line and "unciosed" not in line


@pytest.mark.parametrize("command", ["run", "doctor"])
def test_a_configured_rule_refusing_nearly_every_prompt_stops_genbot_in_one_line(
    tmp_path: Path, command: str
) -> None:
    toml = (
        '[moderation]\nwords = { nsfw = ["nude", "a"] }\npatterns = { x = ["(?P<w>gore)", "x?"] }\n'
    )
    result = invoke_with(toml, command, tmp_path)
    assert result.exit_code == 1
    assert error_lines(result) == [
        "Error: invalid configuration: [moderation] words: category 'nsfw', word 'a': a word rule"
        " has at least 2 letters or digits, since a shorter one would refuse nearly every prompt;"
        " [moderation] patterns: category 'x', pattern 'x?': it can match an empty stretch of"
        " text, so it would refuse nearly every prompt"
    ], "one line, naming both; the named group is fine"


def test_a_pattern_from_the_environment_names_its_variable(tmp_path: Path) -> None:
    patterns = '{"x": ["a(?<=b)"]}'
    result = invoke("doctor", env={"GENBOT_MODERATION__PATTERNS": patterns}, cwd=tmp_path)
    assert result.exit_code == 1
    [line] = error_lines(result)
    assert line.startswith(
        "Error: invalid configuration: [moderation] patterns (GENBOT_MODERATION__PATTERNS): "
        "category 'x', pattern 'a(?<=b)': genbot runs patterns on RE2"
    )


def test_a_trusted_proxy_that_is_no_address_stops_the_start_naming_the_entry(
    tmp_path: Path,
) -> None:
    config = tmp_path / "genbot.toml"
    config.write_text('[web]\ntrusted_proxies = ["10.0.0.0/8", "proxy.lan"]\n', encoding="utf-8")
    result = invoke("--config", str(config), "run", cwd=tmp_path)
    assert result.exit_code == 1
    assert error_lines(result) == [
        "Error: invalid configuration: [web] trusted_proxies: entry 2 of 2 is not an IP address"
        " or network: write each as an address (10.0.0.5, ::1) or a CIDR network (10.0.0.0/8,"
        " fd00::/8)"
    ]
