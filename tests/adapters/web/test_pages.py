"""The page, its assets, sessions and the command catalogue."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from aiohttp import ClientSession, ClientTimeout, CookieJar

from adapters.web import WEB_PROFILE, WebAdapter
from bot.api.chat import allowed_chat_models
from bot.kernel import COMMANDS, Plan
from tests.adapters.web.conftest import DOCUMENT_LIMIT, UPLOAD_LIMIT
from tests.adapters.web.fakes import history
from tests.resilience.support import genbot_stack

EXTERNAL_REFERENCE = re.compile(
    r"""(src|href)\s*=\s*["']?(https?:)?//|url\(\s*["']?(https?:)?//|@import|from\s+["'](https?:)?//"""
)


async def test_page_and_every_asset_it_loads_are_served_without_external_references(
    browser: ClientSession,
) -> None:
    async with browser.get("/") as response:
        assert response.status == 200
        assert response.content_type == "text/html"
        page = await response.text()
    assert '<script type="module" src="/static/app.js"></script>' in page
    assets = set(re.findall(r'(?:src|href)="(/static/[^"]+)"', page))
    assert {"/static/app.js", "/static/style.css", "/static/favicon.svg"} <= assets
    pending, seen = list(assets), set()
    while pending:
        path = pending.pop()
        if path in seen:
            continue
        seen.add(path)
        async with browser.get(path) as response:
            assert response.status == 200, path
            body = await response.text()
        expected = {".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml"}
        assert response.content_type == expected[path[path.rindex(".") :]], path
        assert not EXTERNAL_REFERENCE.search(body), f"{path} loads something from elsewhere"
        pending += [f"/static/{name}" for name in re.findall(r'from "\./([\w.]+)"', body)]
    assert {"/static/markdown.js", "/static/palette.js", "/static/composer.js"} <= seen
    assert not EXTERNAL_REFERENCE.search(page)


async def test_page_is_sent_with_a_strict_content_security_policy(browser: ClientSession) -> None:
    async with browser.get("/") as response:
        policy = response.headers["Content-Security-Policy"]
        assert "script-src 'self'" in policy
        assert "default-src 'self'" in policy
        assert response.headers["X-Content-Type-Options"] == "nosniff"


async def test_unknown_or_unsafe_static_paths_are_404(browser: ClientSession) -> None:
    for path in ("/static/missing.js", "/static/.hidden.js", "/static/..%2Fadapter.py"):
        async with browser.get(path) as response:
            assert response.status == 404, path


async def test_each_browser_gets_its_own_stable_user(
    adapter: WebAdapter, browsers: Callable[[], ClientSession]
) -> None:
    first = ClientSession(base_url=adapter.url, cookie_jar=CookieJar(unsafe=True))
    second = browsers()
    async with first, first.get("/") as response:
        cookie = response.cookies["genbot_session"]
        assert cookie["httponly"]
        assert cookie["samesite"] == "Strict"
        me = (await history(first))["me"]
        assert me["id"].startswith("web-")
        assert me["name"] == f"guest {me['id'][-4:]}", "as others see this user"
        assert (await history(first))["me"] == me
        assert me["id"] not in cookie.value
        other = (await history(second))["me"]
        assert other["id"].startswith("web-") and other["id"] != me["id"]


async def test_history_reports_the_profile_the_limits_and_the_channels(
    browser: ClientSession, adapter: WebAdapter
) -> None:
    body = await history(browser, "lab")
    assert body["channel"] == "lab"
    assert body["profile"] == {"max_text": 4000}
    assert body["limits"] == {
        "max_upload_bytes": UPLOAD_LIMIT,
        "max_document_bytes": DOCUMENT_LIMIT,
    }
    assert body["channels"][:3] == ["general", "art", "lab"]
    assert body["messages"] == []
    assert body["seq"] == 0


async def test_the_platform_profile_is_the_playgrounds() -> None:
    assert WEB_PROFILE.max_text == 4000
    assert WEB_PROFILE.edits_per_window_per_channel == 20
    assert WEB_PROFILE.edit_window_seconds == 1.0


async def test_commands_are_served_from_the_catalogue(browser: ClientSession) -> None:
    async with browser.get("/api/commands") as response:
        assert response.status == 200
        commands = {c["name"]: c for c in (await response.json())["commands"]}
    assert list(commands) == [spec.name for spec in COMMANDS]
    assert commands["diffusion.txt2img"]["usage"] == "/diffusion txt2img"
    assert commands["imagine"]["description"] == "Create four images from a prompt"
    imagine_options = {o["name"]: o for o in commands["imagine"]["options"]}
    assert imagine_options["aspect_ratio"]["flags"] == ["--ar", "--aspect"]
    assert "--fast" in imagine_options["process_mode"]["flag_values"]
    assert imagine_options["prompt"]["required"] is True
    assert commands["blend"]["uploads"] == ["image1", "image2", "image3", "image4", "image5"]
    assert commands["describe"]["uploads"] == ["image"]
    assert commands["diffusion.img2img"]["uploads"][0] == "init_image"
    assert commands["usage"]["options"] == []
    assert [o["name"] for o in commands["help"]["options"]] == ["command"]


@pytest.mark.parametrize("plan", ["free", "developer"])
async def test_the_model_choices_are_the_configured_plans(plan: Plan, tmp_path: Path) -> None:
    async with (
        genbot_stack(tmp_path, plan=plan, with_web=True) as genbot,
        ClientSession(cookie_jar=CookieJar(unsafe=True), timeout=ClientTimeout(total=10)) as web,
    ):
        assert genbot.web is not None
        async with web.get(f"{genbot.web.url}/") as page:
            assert page.status == 200
        async with web.get(f"{genbot.web.url}/api/commands") as response:
            commands = {c["name"]: c for c in (await response.json())["commands"]}

    for name in ("chat", "settings"):
        [choices] = [o["choices"] for o in commands[name]["options"] if o["name"] == "model"]
        assert choices == allowed_chat_models(plan)
        assert any(model.startswith("llm-4") for model in choices) == (plan == "developer")
