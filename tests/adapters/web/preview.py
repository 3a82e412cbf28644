"""Serve the playground with sample messages and the recording core, to look at it in a browser.

    .venv/bin/python -m tests.adapters.web.preview --port 8765 --seconds 60
    .venv/bin/python -m tests.adapters.web.preview --port 0 --screenshot /tmp/web.png

``--screenshot`` drives Debian's chromium (``/usr/bin/chromium``) with playwright, waits for the
live stream and the images, saves a 1200x800 PNG and exits.

Every browser is given the same session (so the sample messages are "yours", ephemeral reply
included). Buttons, commands and messages are answered by the test double of the core.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from aiohttp import web
from multidict import CIMultiDict

from adapters.web import WebAdapter
from adapters.web.access import SESSION_COOKIE, user_id_for
from adapters.web.platform import WebContext, web_place
from adapters.web.routes import ADAPTER
from adapters.web.settings import WebSettings
from bot.kernel import Command, ImageFile, OutMessage, User
from tests.adapters.web.fakes import RecordingCore, grid_buttons, grid_png
from tests.fakes.router import FakeRouter

PREVIEW_SESSION = "preview-session-012345678"[:24]
CODE_ANSWER = """Use slicing or `reversed()`:

```python
numbers = [1, 2, 3, 4]
backwards = numbers[::-1]        # a new list
numbers.reverse()                # in place
print(list(reversed(backwards)))
```

- `[::-1]` **copies** the list
- `.reverse()` changes it *in place* and returns `None`

See the [Python tutorial](https://docs.python.org/3/tutorial/datastructures.html) for more."""


@web.middleware
async def same_session_for_everyone(request: web.Request, handler: Any) -> web.StreamResponse:
    if SESSION_COOKIE not in request.cookies:
        headers = CIMultiDict(request.headers)
        cookie = request.app[ADAPTER].access.cookie_for(PREVIEW_SESSION)
        headers["Cookie"] = f"{SESSION_COOKIE}={cookie}"
        request = request.clone(headers=headers)
    response: web.StreamResponse = await handler(request)
    return response


async def post_samples(adapter: WebAdapter) -> None:
    """A grid with its buttons, a Markdown answer with code and an ephemeral reply."""
    me = User(id=user_id_for(PREVIEW_SESSION), name="you")
    place = web_place("general")

    def command(name: str, text: str, echo_id: str) -> Command:
        return Command(user=me, place=place, context=WebContext(echo_id), name=name, text=text)

    prompt = "a lighthouse at dusk, volumetric light --ar 1:1"
    echo = await adapter.playground.post_user_message(
        me, place, f"/imagine {prompt}", [], command="imagine"
    )
    grid = OutMessage(
        f"**{prompt}** — (fast)",
        images=(ImageFile("lighthouse.png", grid_png(512)),),
        buttons=grid_buttons("job-1"),
        mention_user_id=me.id,
    )
    await adapter.surface.send(place, grid, origin=command("imagine", prompt, echo.id))
    question = "how do I reverse a list in python?"
    echo = await adapter.playground.post_user_message(
        me, place, f"/chat {question}", [], command="chat"
    )
    origin = command("chat", question, echo.id)
    await adapter.surface.send(place, OutMessage(CODE_ANSWER, from_model=True), origin=origin)
    await adapter.surface.send_ephemeral(origin, "You have **182 credits** left today.")


async def screenshot(url: str, path: str, chromium: str = "/usr/bin/chromium") -> None:
    """Save what a 1200x800 browser window shows once the page is live and images loaded."""
    from playwright.async_api import async_playwright

    from tests.adapters.web.browser import CHROMIUM_ARGS

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            page = await browser.new_page(viewport={"width": 1200, "height": 800})
            await page.goto(url)
            await page.wait_for_selector(".connection.live", timeout=10_000)
            await page.wait_for_function(
                "[...document.images].every((image) => image.complete)", timeout=10_000
            )
            await page.screenshot(path=path)
        finally:
            await browser.close()


async def main(port: int, seconds: float, screenshot_path: str | None) -> None:
    core = RecordingCore(edit_pause=0.3)
    adapter = WebAdapter(WebSettings(host="127.0.0.1", port=port))
    core.surface = adapter.surface
    adapter.app.middlewares.insert(0, same_session_for_everyone)
    await adapter.start(FakeRouter(core, [adapter.surface]))
    await post_samples(adapter)
    print(f"playground preview at {adapter.url}", flush=True)
    try:
        if screenshot_path:
            await screenshot(adapter.url + "/", screenshot_path)
            print(f"screenshot saved to {screenshot_path}")
        else:
            await asyncio.sleep(seconds)
    finally:
        await adapter.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--seconds", type=float, default=300.0)
    parser.add_argument("--screenshot", metavar="PNG", help="save a screenshot and exit")
    arguments = parser.parse_args()
    asyncio.run(main(arguments.port, arguments.seconds, arguments.screenshot))
