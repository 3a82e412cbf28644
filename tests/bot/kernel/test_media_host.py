"""Re-hosted media: public URLs with random names, served from the shared database (each fetch
counted), forged names refused, unread ones counted."""

from __future__ import annotations

from pathlib import Path

from bot.kernel import MediaHost, inspect_image
from storage import SqliteStore
from tests.adapters.web.fakes import png

BASE = "https://genbot.example.org"


async def test_hosted_images_are_served_until_they_expire_and_their_fetches_counted(
    tmp_path: Path,
) -> None:
    now = [1_700_000_000.0]
    async with await SqliteStore.open(tmp_path / "genbot.db", clock=lambda: now[0]) as store:
        host = MediaHost(BASE + "/", store.media, ttl=600)
        url = await host.put(inspect_image(png(30, 20)), "web:alice")
        other = await host.put_bytes(png(8, 8))
        assert url.startswith(f"{BASE}/media/") and url.endswith(".png")
        name = url.rsplit("/", 1)[1]
        assert host.name_of(url) == name and host.name_of("https://elsewhere/media/x.png") is None
        assert await host.unread((url, other, "https://example.com/a.png")) == 2

        hosted = await host.get(name)
        assert hosted is not None and hosted.content_type == "image/png"
        assert hosted.data == png(30, 20)
        assert await host.unread((url, other)) == 1
        for forged in ("../genbot.db", name.replace(".png", ".html"), "x" * 24 + ".png", ""):
            assert await host.get(forged) is None
        now[0] += 601
        assert await host.get(name) is None
