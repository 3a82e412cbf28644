"""Re-hosted media: files beside the database (private), kept across a restart, expired, capped."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from bot.kernel import MediaHost, inspect_image, media_folder
from tests.adapters.web.fakes import png

BASE = "https://genbot.example.org"


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


async def test_hosted_images_are_private_files_that_survive_a_restart(tmp_path: Path) -> None:
    folder = media_folder(tmp_path / "genbot.db")
    assert folder == tmp_path / "genbot.media"
    previous = os.umask(0)
    try:
        url = await MediaHost(BASE, folder).put(inspect_image(png(30, 20)))
    finally:
        os.umask(previous)
    assert url.startswith(f"{BASE}/media/") and url.endswith(".png")
    name = url.rsplit("/", 1)[1]
    [kept] = list(folder.iterdir())
    assert mode(folder) == 0o700 and mode(kept) == 0o600

    restarted = MediaHost(BASE, folder)
    hosted = restarted.get(name)
    assert hosted is not None and hosted.content_type == "image/png"
    assert hosted.path.read_bytes() == png(30, 20)
    for forged in ("../genbot.db", name.replace(".png", ".html"), "x" * 24 + ".png", ""):
        assert restarted.get(forged) is None


async def test_hosted_images_expire_and_the_oldest_go_past_the_cap(tmp_path: Path) -> None:
    now = [1_700_000_000.0]
    image = inspect_image(png(64, 64))
    host = MediaHost(
        BASE, tmp_path / "media", max_total_bytes=3 * len(image.data), ttl=600, clock=lambda: now[0]
    )
    names = []
    for step in range(4):
        names.append((await host.put(image)).rsplit("/", 1)[1])
        os.utime(tmp_path / "media" / names[-1], (now[0] + step, now[0] + step))
    kept = sorted(p.name for p in (tmp_path / "media").iterdir())
    assert host.get(names[0]) is None and len(kept) == 3
    assert all(host.get(name) is not None for name in names[1:])
    now[0] += 605
    assert all(host.get(name) is None for name in names)
    await host.put(image)
    assert len(list((tmp_path / "media").iterdir())) == 1


async def test_one_users_images_push_out_only_their_own(tmp_path: Path) -> None:
    """Alice keeps two images waiting for the provider; Mallory re-hosts ten: his own oldest
    go, hers stay (before the per-user cap, the folder's oldest went, hers first)."""
    now = [1_700_000_000.0]
    image = inspect_image(png(64, 64))
    size = len(image.data)
    host = MediaHost(
        BASE,
        tmp_path / "media",
        max_total_bytes=8 * size,
        max_bytes_per_owner=3 * size,
        clock=lambda: now[0],
    )
    step = iter(range(100))

    async def put(owner: str | None) -> str:
        name = (await host.put(image, owner)).rsplit("/", 1)[1]
        moment = now[0] + next(step)
        os.utime(tmp_path / "media" / name, (moment, moment))
        return name

    hers = [await put("web:alice") for _ in range(2)]
    his = [await put("web:mallory") for _ in range(10)]
    assert all(host.get(name) is not None for name in hers)
    assert [host.get(name) is not None for name in his] == [False] * 7 + [True] * 3
    unknown = [await put(None) for _ in range(4)]
    assert len(list((tmp_path / "media").iterdir())) == 8
    assert host.get(unknown[-1]) is not None and host.get(hers[0]) is None
