"""The App Home of the fake Slack, mixed into :class:`tests.fakes.slack.FakeSlack`:
``views.publish`` with Slack's checks of a Home tab view (``type: home``, up to 100 blocks,
images that exist), the ``app_home_opened`` event, and a press of a button on the Home tab.

Images are checked where Slack checks them: an image element or block needs ``alt_text`` and
either an http(s) ``image_url`` or a ``slack_file`` (by ``id`` or ``url``, not both) naming a
PNG, JPEG or GIF file of the workspace that is processed and that the bot may use
(``invalid_blocks``, "invalid slack file", as Slack answers; see
:mod:`tests.fakes.slack_files`). The same check applies to image blocks in messages
(:meth:`SlackHomeApi.image_errors`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tests.fakes.slack_model import FakeFile, SlackError, new_id

Args = dict[str, Any]

HOME_BLOCKS_MAX = 100
SECTION_TEXT_MAX = 3000
ALT_TEXT_MAX = 2000
BLOCK_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif"})
"""The types a ``slack_file`` may be (Slack's "Slack file object": png, jpg, jpeg and gif)."""
HOME_BLOCK_TYPES = frozenset({"actions", "context", "divider", "header", "image", "section"})


class SlackHomeApi:
    """``views.publish`` and the Home tab's events."""

    files: dict[str, FakeFile]
    users: dict[str, str]
    app_id: str
    home_views: dict[tuple[str, str], Args]
    _triggers: dict[str, float]
    clock: Callable[[], float]

    if TYPE_CHECKING:

        @property
        def team_id(self) -> str: ...

        @property
        def bot_user_id(self) -> str: ...

        def _issue_trigger(self) -> str: ...

        def file_ready(self, file: FakeFile) -> bool: ...

        def usable_by(self, file: FakeFile, user: str) -> bool: ...

    def home_methods(self) -> dict[str, Callable[[Args], Args]]:
        return {"views.publish": self._views_publish}

    def home_of(self, user: str, team: str | None = None) -> Args | None:
        """The Home tab ``user`` sees (in ``team``, else the current workspace)."""
        return self.home_views.get((team or self.team_id, user))

    # Checks ---------------------------------------------------------------------------------

    def image_errors(self, blocks: Any) -> list[str]:
        """Problems with the images in ``blocks`` (image blocks, section accessories)."""
        errors: list[str] = []
        for index, block in enumerate(blocks if isinstance(blocks, list) else []):
            if not isinstance(block, dict):
                continue
            where = f"[json-pointer:/blocks/{index}]"
            if block.get("type") == "image":
                errors += self._image(block, where)
            accessory = block.get("accessory")
            if isinstance(accessory, dict) and accessory.get("type") == "image":
                errors += self._image(accessory, where + "/accessory")
        return errors

    def _image(self, image: Args, where: str) -> list[str]:
        alt = image.get("alt_text")
        if not isinstance(alt, str) or not 1 <= len(alt) <= ALT_TEXT_MAX:
            return [f"alt_text must be 1 to {ALT_TEXT_MAX} characters {where}"]
        url, slack_file = image.get("image_url"), image.get("slack_file")
        if (url is None) == (slack_file is None):
            return [f"give image_url or slack_file {where}"]
        if url is not None:
            ok = isinstance(url, str) and url.startswith(("http://", "https://"))
            return [] if ok else [f"invalid image_url {where}"]
        if not isinstance(slack_file, dict) or ("id" in slack_file) == ("url" in slack_file):
            return [f"give slack_file an id or a url {where}"]
        file = self._file_named(slack_file)
        usable = (
            file is not None
            and self.file_ready(file)
            and self.usable_by(file, self.bot_user_id)
            and file.mimetype in BLOCK_IMAGE_TYPES
        )
        return [] if usable else [f"invalid slack file {where}/slack_file"]

    def _file_named(self, slack_file: Args) -> FakeFile | None:
        if "id" in slack_file:
            return self.files.get(str(slack_file["id"]))
        url = str(slack_file.get("url") or "")
        return next((f for f in self.files.values() if url == f.url_private), None)

    def _home_errors(self, view: Any) -> list[str]:
        if not isinstance(view, dict) or view.get("type") != "home":
            return ["view type must be home"]
        blocks = view.get("blocks")
        if not isinstance(blocks, list) or not 1 <= len(blocks) <= HOME_BLOCKS_MAX:
            return [f"a Home tab needs 1 to {HOME_BLOCKS_MAX} blocks"]
        errors: list[str] = []
        action_ids: set[str] = set()
        for index, block in enumerate(blocks):
            where = f"[json-pointer:/view/blocks/{index}]"
            if not isinstance(block, dict) or block.get("type") not in HOME_BLOCK_TYPES:
                errors.append(f"unsupported block type {where}")
                continue
            text = block.get("text")
            if block["type"] == "section":
                value = text.get("text") if isinstance(text, dict) else None
                if not isinstance(value, str) or not 1 <= len(value) <= SECTION_TEXT_MAX:
                    errors.append(f"section text must be 1 to {SECTION_TEXT_MAX} {where}")
            elements = [block.get("accessory"), *(block.get("elements") or [])]
            for element in elements:
                if isinstance(element, dict) and element.get("type") == "button":
                    action_id = str(element.get("action_id") or "")
                    if not action_id or action_id in action_ids:
                        errors.append(f"missing or duplicate action_id {where}")
                    action_ids.add(action_id)
        return errors + self.image_errors(blocks)

    # Web API --------------------------------------------------------------------------------

    def _views_publish(self, args: Args) -> Args:
        user = str(args.get("user_id") or "")
        if user not in self.users:
            raise SlackError("user_not_found")
        view = args.get("view")
        errors = self._home_errors(view)
        if errors:
            raise SlackError("invalid_arguments", errors=errors)
        assert isinstance(view, dict)
        published = {**view, "id": new_id("V"), "team_id": self.team_id, "hash": new_id("h")}
        self.home_views[(self.team_id, user)] = published
        return {"view": published}

    # Payloads -------------------------------------------------------------------------------

    def app_home_opened_event(self, user: str, channel: str, tab: str = "home") -> Args:
        """What Slack sends when ``user`` opens a tab of the app (their DM is ``channel``)."""
        event: Args = {
            "type": "app_home_opened",
            "user": user,
            "channel": channel,
            "tab": tab,
            "event_ts": f"{time.time():.6f}",
        }
        shown = self.home_of(user)
        if tab == "home" and shown is not None:
            event["view"] = shown
        return event

    def home_action(self, user: str, action_id: str) -> Args:
        """The ``block_actions`` payload of ``user`` pressing the button ``action_id`` on their
        Home tab (as last published)."""
        view = self.home_of(user)
        assert view is not None, "nothing published"
        return {
            "type": "block_actions",
            "user": {"id": user, "username": self.users[user], "team_id": self.team_id},
            "api_app_id": self.app_id,
            "team": {"id": self.team_id, "domain": "fake"},
            "container": {"type": "view", "view_id": view["id"]},
            "trigger_id": self._issue_trigger(),
            "view": view,
            "actions": [
                {
                    "type": "button",
                    "action_id": action_id,
                    "block_id": "b",
                    "value": action_id,
                    "action_ts": f"{time.time():.6f}",
                }
            ],
        }
