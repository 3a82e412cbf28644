"""Images within Discord's upload limit: recompressed when too large, linked when they cannot
fit, the limit learnt from interactions (10 MiB until one says otherwise)."""

from __future__ import annotations

import io
import random

import pytest
from PIL import Image

from adapters.discord.uploads import DEFAULT_UPLOAD_LIMIT, fit_images
from bot.kernel import ImageFile, OutMessage, Place
from tests.adapters.discord.harness import Harness
from tests.fakes.discord import FakeDiscord

LIMIT = 60_000


def noisy_png(side: int = 400) -> bytes:
    """A PNG that does not compress well (far above :data:`LIMIT`)."""
    rng = random.Random(7)
    picture = Image.frombytes("RGB", (side, side), rng.randbytes(side * side * 3))
    buffer = io.BytesIO()
    picture.save(buffer, format="PNG")
    return buffer.getvalue()


def general(fake: FakeDiscord) -> Place:
    return Place("discord", str(fake.guild_id), str(fake.channel("general").id))


def test_an_image_above_the_limit_becomes_a_smaller_jpeg_and_one_that_cannot_is_left_out() -> None:
    big = ImageFile("grid-1.png", noisy_png(), url="https://provider/1.png")
    assert len(big.data) > LIMIT
    fitted = fit_images([big], LIMIT)
    [jpeg] = fitted.images
    assert jpeg.filename == "grid-1.jpg" and jpeg.content_type == "image/jpeg"
    assert len(jpeg.data) <= LIMIT and fitted.left_out == ()
    assert fit_images([big], 200).left_out == (big,)
    small = ImageFile("s.png", b"x" * 10)
    assert fit_images([small], DEFAULT_UPLOAD_LIMIT).images == (small,)


@pytest.mark.parametrize("fake", [{"attachment_size_limit": LIMIT}], indirect=True)
async def test_the_surface_uploads_within_the_limit_an_interaction_reported(bot: Harness) -> None:
    fake, surface = bot.fake, bot.adapters[0].surface
    place = general(fake)
    assert surface.upload_limit(place) == DEFAULT_UPLOAD_LIMIT
    interaction = await fake.slash(fake.user("alice"), fake.channel("general"), "help", {})
    await fake.answered(interaction)
    assert surface.upload_limit(place) == LIMIT

    big = ImageFile("grid.png", noisy_png(), url="https://provider/grid.png")
    ref = await surface.send(place, OutMessage("the grid", images=(big,)))
    [attachment] = fake.messages[int(ref.message_id)].attachments
    assert attachment.filename == "grid.jpg" and len(attachment.data) <= LIMIT

    surface.remember_upload_limit(place, 300)
    await surface.edit(ref, OutMessage("the grid again", images=(big,)))
    message = fake.messages[int(ref.message_id)]
    assert message.attachments == []
    assert (
        message.content == "the grid again\n_(too large to upload here: https://provider/grid.png)_"
    )
