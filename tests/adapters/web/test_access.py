"""The playground's trust model over real HTTP: Host allow-list (DNS rebinding), no admin by
address, the access token for browsers and API clients, and identities only a page load mints,
a few an hour per client address."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from aiohttp import ClientSession, CookieJar
from pydantic import SecretStr, ValidationError

from adapters import AdapterStartError
from adapters.web import WebAdapter
from adapters.web.access import (
    ACCESS_COOKIE_SECONDS,
    Access,
    client_address,
    client_key,
    exposure_problem,
)
from adapters.web.routes import WRONG_ADMIN_LINK
from adapters.web.settings import WebSettings, proxy_network
from bot.kernel import Command
from storage import SqliteStore
from tests.adapters.web.browser import chromium
from tests.adapters.web.fakes import RecordingCore
from tests.fakes.router import FakeRouter

TOKEN = "never-print-playground-token-0123"
FOX = {"text": "/imagine a fox", "channel": "general"}


@asynccontextmanager
async def playground(
    core: RecordingCore, history: Path | None = None, admin_link: bool = False, **settings: Any
) -> AsyncIterator[WebAdapter]:
    async with AsyncExitStack() as stack:
        store = (
            await stack.enter_async_context(await SqliteStore.open(history))
            if history is not None
            else None
        )
        adapter = WebAdapter(
            WebSettings(host="127.0.0.1", port=0, **settings),
            history=None if store is None else store.playground,
            admin_link=admin_link,
            keepalive_seconds=0.05,
        )
        core.surface = adapter.surface
        await adapter.start(FakeRouter(core, [adapter.surface]))
        try:
            yield adapter
        finally:
            await adapter.stop()


@asynccontextmanager
async def browser(adapter: WebAdapter, *, load_page: bool = True) -> AsyncIterator[ClientSession]:
    async with ClientSession(base_url=adapter.url, cookie_jar=CookieJar(unsafe=True)) as session:
        if load_page:
            async with session.get("/") as page:
                assert page.status == 200, await page.text()
        yield session


async def status_and_error(response: Any) -> tuple[int, str]:
    body = await response.json(content_type=None)
    return response.status, str(body.get("error", ""))


async def test_a_foreign_host_gets_421_and_runs_nothing() -> None:
    core = RecordingCore()
    async with playground(core) as adapter, browser(adapter) as session:
        port = adapter.url.rsplit(":", 1)[1]
        rebound = f"rebind.attacker.test:{port}"
        foreign = {"Host": rebound, "Origin": f"http://{rebound}"}
        for method, path, body in [
            ("GET", "/", None),
            ("GET", "/api/history?channel=general", None),
            ("GET", "/api/events?channel=general", None),
            ("POST", "/api/command", FOX),
            ("POST", "/api/modal", {"custom_id": "x", "values": {}}),
        ]:
            async with session.request(method, path, json=body, headers=foreign) as response:
                status, error = await status_and_error(response)
                assert status == 421, (path, status)
                assert "[web] allowed_hosts" in error
        for name in ("", "127.0.0.2", "localhost.", "127.0.0.1.nip.io", "evil@127.0.0.1"):
            async with session.get("/", headers={"Host": name}) as response:
                assert response.status == 421, name
        assert core.events == []
        assert adapter.playground.store.history("general", "") == []
        assert adapter.listener.refusals.totals["Host not allowed"] == 10


async def test_loopback_names_public_url_and_allowed_hosts_are_served() -> None:
    core = RecordingCore()
    settings: dict[str, Any] = {
        "public_url": "https://genbot.example.org/",
        "allowed_hosts": ["genbot.lan", "192.168.1.20:8080", "[fd00::1]"],
        "new_sessions_per_hour": 0,
    }
    async with playground(core, **settings) as adapter, browser(adapter) as session:
        port = adapter.url.rsplit(":", 1)[1]
        served = [
            f"localhost:{port}",
            f"[::1]:{port}",
            "127.0.0.1",
            "genbot.example.org",
            "GENBOT.example.org:443",
            "genbot.lan:9999",
            "192.168.1.20:8080",
            "[fd00::1]:80",
        ]
        for host in served:
            async with session.get("/", headers={"Host": host}) as response:
                assert response.status == 200, host
        async with session.get("/", headers={"Host": "192.168.1.20:8081"}) as response:
            assert response.status == 421


async def test_nobody_is_an_admin_because_of_their_address() -> None:
    core = RecordingCore()
    async with playground(core) as adapter, browser(adapter) as session:
        async with session.post("/api/command", json=FOX) as response:
            assert response.status == 202
        [event] = await core.wait_for_events(1)
        assert isinstance(event, Command) and event.user.is_admin is False

    core = RecordingCore()
    async with (
        playground(core, admin_ids=["web-000000000000"]) as adapter,
        browser(adapter) as session,
        session.post("/api/command", json=FOX),
    ):
        [event] = await core.wait_for_events(1)
        assert event.user.is_admin is False


async def test_the_demo_admin_link_makes_only_the_browser_that_opens_it_an_admin() -> None:
    core = RecordingCore()
    async with (
        playground(core, admin_link=True) as adapter,
        browser(adapter) as local,
        browser(adapter) as admin,
    ):
        assert adapter.admin_url is not None
        link = adapter.admin_url.removeprefix(adapter.url)
        async with admin.get(link, allow_redirects=False) as response:
            assert (response.status, response.headers["Location"]) == (303, "/")
        async with local.get("/?admin=not-the-token", allow_redirects=False) as response:
            assert await status_and_error(response) == (403, WRONG_ADMIN_LINK)
        for session in (local, admin):
            async with session.post("/api/command", json=FOX) as response:
                assert response.status == 202
        events = await core.wait_for_events(2)
        assert [event.user.is_admin for event in events] == [False, True]

    async with playground(RecordingCore()) as adapter, browser(adapter) as session:
        assert adapter.admin_url is None
        async with session.get("/?admin=", allow_redirects=False) as response:
            assert response.status == 403, "no link without genbot demo"


async def test_admin_ids_name_admins_and_the_identity_survives_a_restart(tmp_path: Path) -> None:
    history = tmp_path / "genbot.db"
    jar = CookieJar(unsafe=True)
    core = RecordingCore()
    async with (
        playground(core, history) as adapter,
        ClientSession(base_url=adapter.url, cookie_jar=jar) as session,
    ):
        async with session.get("/"):
            pass
        async with session.get("/api/history?channel=general") as response:
            me = (await response.json())["me"]["id"]

    core = RecordingCore()
    async with playground(core, history, admin_ids=[me]) as adapter:
        async with (
            ClientSession(base_url=adapter.url, cookie_jar=jar) as session,
            session.post("/api/command", json=FOX) as response,
        ):
            assert response.status == 202
        [event] = await core.wait_for_events(1)
        assert event.user.id == me and event.user.is_admin is True


async def test_api_requests_without_a_session_from_a_page_load_are_refused() -> None:
    core = RecordingCore()
    async with playground(core) as adapter:
        forged = "A" * 24 + "." + "B" * 22
        async with browser(adapter, load_page=False) as session:
            for cookie in (None, forged, "resilience_session_token_0123456"):
                headers = {"Cookie": f"genbot_session={cookie}"} if cookie else {}
                async with session.post("/api/command", json=FOX, headers=headers) as response:
                    status, error = await status_and_error(response)
                    assert status == 401 and "Load the playground page first" in error
                async with session.post("/api/upload", data=b"", headers=headers) as response:
                    assert response.status == 401
        assert core.events == []
        async with browser(adapter) as session:
            async with session.post("/api/command", json=FOX) as first:
                assert first.status == 202
            async with session.post("/api/command", json=FOX) as second:
                assert second.status == 202
        events = await core.wait_for_events(2)
        assert events[0].user.id == events[1].user.id


async def test_page_loads_without_a_session_start_at_most_the_hourly_allowance_of_users() -> None:
    core = RecordingCore()
    token = {"token": TOKEN}
    async with playground(core, access_token=SecretStr(TOKEN)) as adapter:
        async with browser(adapter, load_page=False) as keeper:
            async with keeper.get("/", params=token) as page:
                assert page.status == 200
            for _ in range(4):
                async with (
                    browser(adapter, load_page=False) as dropper,
                    dropper.get("/", params=token) as page,
                ):
                    assert page.status == 200 and "genbot_session" in page.cookies
            async with browser(adapter, load_page=False) as dropper:
                async with dropper.get("/", params=token) as page:
                    status, error = await status_and_error(page)
                    assert status == 429 and "genbot_session" not in page.cookies
                    assert 3590 <= int(page.headers["Retry-After"]) <= 3600
                    assert "at most 5 an hour" in error and "try again in 60 min" in error
                async with dropper.post("/api/command", json=FOX) as response:
                    status, error = await status_and_error(response)
                    assert status == 401 and "Load the playground page first" in error
            for _ in range(3):
                async with keeper.get("/") as page:
                    assert page.status == 200 and "genbot_session" not in page.cookies
            async with keeper.post("/api/command", json=FOX) as response:
                assert response.status == 202
        [event] = await core.wait_for_events(1)
        assert event.user.id.startswith("web-")


async def test_the_allowance_is_a_setting_and_0_lifts_it() -> None:
    async with (
        playground(RecordingCore(), new_sessions_per_hour=1) as adapter,
        browser(adapter) as kept,
    ):
        async with browser(adapter, load_page=False) as second, second.get("/") as page:
            assert page.status == 429
            assert "at most 1 an hour" in (await status_and_error(page))[1]
        async with kept.get("/") as page:
            assert page.status == 200
    async with playground(RecordingCore(), new_sessions_per_hour=0) as adapter:
        for _ in range(8):
            async with browser(adapter):
                pass


def test_an_allowance_is_per_ipv4_address_and_per_ipv6_64() -> None:
    assert client_key("192.0.2.7") == "192.0.2.7"
    assert client_key("::ffff:192.0.2.7") == "192.0.2.7"
    assert client_key("2001:db8:1:2:aaaa::1") == client_key("2001:db8:1:2:bbbb::9")
    assert client_key("2001:db8:1:2::1") == "2001:db8:1:2::/64"
    assert client_key("2001:db8:1:3::1") != client_key("2001:db8:1:2::1")
    assert client_key(None) == "" and client_key("unix") == "unix"


async def page_load_status(adapter: WebAdapter, forwarded_for: str | None) -> int:
    """The status of a page load without a session that says it was forwarded for
    ``forwarded_for`` (None: it says nothing)."""
    headers = {} if forwarded_for is None else {"X-Forwarded-For": forwarded_for}
    async with (
        browser(adapter, load_page=False) as loader,
        loader.get("/", headers=headers) as page,
    ):
        return page.status


async def test_behind_a_trusted_proxy_each_forwarded_client_has_its_own_allowance() -> None:
    """The connection comes from 127.0.0.1, a trusted proxy: the client is the right-most
    address of ``X-Forwarded-For`` that is not one (what a client wrote itself before it is
    never believed)."""
    async with playground(
        RecordingCore(), new_sessions_per_hour=1, trusted_proxies=["127.0.0.0/8", "10.0.0.2"]
    ) as adapter:
        assert await page_load_status(adapter, "198.51.100.7") == 200
        assert await page_load_status(adapter, "198.51.100.7") == 429
        assert await page_load_status(adapter, "203.0.113.1, 198.51.100.7") == 429
        assert await page_load_status(adapter, "198.51.100.7, 10.0.0.2") == 429
        assert await page_load_status(adapter, "198.51.100.8") == 200
        assert await page_load_status(adapter, "198.51.100.7, 2001:db8::5") == 200


@pytest.mark.parametrize("trusted", [[], ["10.0.0.0/8"]])
async def test_x_forwarded_for_from_a_peer_that_is_no_trusted_proxy_is_ignored(
    trusted: list[str],
) -> None:
    """Without ``[web] trusted_proxies``, or from a peer not among them, the client is the
    connection's address whatever ``X-Forwarded-For`` says: a spoofed one buys no allowance."""
    async with playground(
        RecordingCore(), new_sessions_per_hour=1, trusted_proxies=trusted
    ) as adapter:
        assert await page_load_status(adapter, "198.51.100.7") == 200
        assert await page_load_status(adapter, "198.51.100.8") == 429
        assert await page_load_status(adapter, None) == 429


def test_the_client_address_read_from_x_forwarded_for() -> None:
    trusted = [proxy_network("10.0.0.0/8"), proxy_network("::1")]
    networks = [network for network in trusted if network is not None]
    assert client_address("10.1.2.3", ["192.0.2.1, 192.0.2.2"], networks) == "192.0.2.2"
    assert client_address("10.1.2.3", ["192.0.2.1", "192.0.2.2, 10.9.9.9"], networks) == (
        "192.0.2.2"
    )
    assert client_address("::ffff:10.1.2.3", ["[2001:db8::1]:443"], networks) == "2001:db8::1"
    assert client_address("::1", ["192.0.2.9:5000"], networks) == "192.0.2.9"
    assert client_address("10.1.2.3", ["10.4.4.4, 10.5.5.5"], networks) == "10.4.4.4"
    assert client_address("10.1.2.3", ["unknown"], networks) == "10.1.2.3"
    assert client_address("10.1.2.3", [], networks) == "10.1.2.3"
    assert client_address("192.0.2.50", ["192.0.2.1"], networks) == "192.0.2.50"
    assert client_address("10.1.2.3", ["192.0.2.1"], []) == "10.1.2.3"


def test_trusted_proxies_are_addresses_or_networks() -> None:
    assert WebSettings(trusted_proxies=["10.0.0.5", "fd00::/8"]).trusted_proxies == [
        "10.0.0.5",
        "fd00::/8",
    ]
    with pytest.raises(ValidationError, match="entries 1, 3 of 3 are not IP addresses"):
        WebSettings(trusted_proxies=["proxy.lan", "::1", "10.0.0.0/33"])


async def test_the_access_token_once_in_the_address_then_as_a_cookie_or_bearer() -> None:
    core = RecordingCore()
    settings: dict[str, Any] = {"access_token": SecretStr(TOKEN)}
    async with playground(core, **settings) as adapter:
        async with browser(adapter, load_page=False) as session:
            async with session.get("/") as response:
                status, error = await status_and_error(response)
                assert status == 401 and "/?token=" in error
            async with session.get("/", params={"token": TOKEN[:-1] + "x"}) as response:
                assert response.status == 401
            async with session.post("/api/command", json=FOX) as response:
                assert response.status == 401
            async with session.get("/", params={"token": TOKEN}, allow_redirects=False) as response:
                assert response.status == 303 and response.headers["Location"] == "/"
                access = response.cookies["genbot_access"]
                assert access["httponly"] and access["samesite"] == "Strict"
                assert TOKEN not in access.value
            async with session.get("/") as page:
                assert page.status == 200
            async with session.post("/api/command", json=FOX) as response:
                assert response.status == 202

        async with ClientSession(base_url=adapter.url) as api:
            bearer = {"Authorization": f"Bearer {TOKEN}"}
            async with api.post("/api/command", json=FOX, headers=bearer) as response:
                assert response.status == 202
            wrong = {"Authorization": "Bearer nope-nope-nope-nope"}
            async with api.post("/api/command", json=FOX, headers=wrong) as response:
                assert response.status == 401
        events = await core.wait_for_events(2)
        assert events[1].user.id == "web-api"


async def test_a_playground_beyond_loopback_needs_a_token() -> None:
    exposed = WebSettings(host="0.0.0.0")
    problem = exposure_problem(exposed)
    assert problem is not None and "[web] access_token" in problem
    assert exposure_problem(WebSettings(host="::1")) is None
    assert exposure_problem(WebSettings(host="localhost")) is None
    short = exposure_problem(WebSettings(host="0.0.0.0", access_token=SecretStr("short")))
    assert short is not None and "too short" in short
    token = SecretStr(TOKEN)
    assert exposure_problem(WebSettings(host="0.0.0.0", access_token=token)) is None

    adapter = WebAdapter(WebSettings(host="192.0.2.1", port=0))
    with pytest.raises(AdapterStartError, match=r"without \[web\] access_token"):
        await adapter.start(FakeRouter(RecordingCore(), [adapter.surface]))


async def test_a_rebound_name_in_a_real_browser_gets_421_and_runs_nothing() -> None:
    core = RecordingCore()
    async with playground(core) as adapter:
        port = adapter.url.rsplit(":", 1)[1]
        rule = "--host-resolver-rules=MAP rebind.attacker.test 127.0.0.1"
        async with chromium(extra_args=[rule]) as real_browser:
            page = await real_browser.new_page()
            response = await page.goto(f"http://rebind.attacker.test:{port}/")
            assert response is not None and response.status == 421
            script = """async () => {
                const sent = await fetch('/api/command', {method: 'POST',
                    headers: {'Content-Type': 'application/json'},
                    body: JSON.stringify({text: '/imagine a fox', channel: 'general'})});
                const read = await fetch('/api/history?channel=general');
                return [sent.status, read.status];
            }"""
            assert await page.evaluate(script) == [421, 421]
            local = await page.goto(f"{adapter.url}/")
            assert local is not None and local.status == 200
        assert core.events == []


async def test_each_browser_gets_its_own_access_cookie_which_a_new_token_revokes() -> None:
    core = RecordingCore()
    https: dict[str, Any] = {
        "access_token": SecretStr(TOKEN),
        "public_url": "https://play.example.org",
    }
    cookies = []
    async with playground(core, **https) as adapter:
        for _ in range(2):
            async with browser(adapter, load_page=False) as session:
                given = {"token": TOKEN}
                async with session.get("/", params=given, allow_redirects=False) as response:
                    access = response.cookies["genbot_access"]
                    assert access["secure"] and access["httponly"]
                    assert 0 < int(access["max-age"]) <= 31 * 24 * 3600
                    cookies.append(access.value)
        assert cookies[0] != cookies[1]
        assert await page_status(adapter, cookies[0]) == 200

    rotated: dict[str, Any] = {**https, "access_token": SecretStr(TOKEN + "-rotated")}
    async with playground(core, **rotated) as adapter:
        assert await page_status(adapter, cookies[0]) == 401


async def page_status(adapter: WebAdapter, access_cookie: str) -> int:
    cookies = {"genbot_access": access_cookie}
    async with ClientSession(base_url=adapter.url, cookies=cookies) as s, s.get("/") as page:
        return page.status


def test_an_access_cookie_expires() -> None:
    now = [1_800_000_000.0]
    access = Access(WebSettings(access_token=SecretStr(TOKEN)), clock=lambda: now[0])
    cookie = access.access_cookie()
    assert access.access_cookie_matches(cookie)
    now[0] += ACCESS_COOKIE_SECONDS - 1
    assert access.access_cookie_matches(cookie)
    now[0] += 2
    assert not access.access_cookie_matches(cookie)
    forged = cookie.rsplit(".", 1)[0].replace(cookie.split(".")[0], str(int(now[0])))
    assert not access.access_cookie_matches(f"{forged}.{cookie.rsplit('.', 1)[1]}")


async def test_cookies_are_not_secure_without_an_https_public_url() -> None:
    async with (
        playground(RecordingCore()) as adapter,
        browser(adapter, load_page=False) as session,
        session.get("/") as page,
    ):
        assert not page.cookies["genbot_session"]["secure"]
