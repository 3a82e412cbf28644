"""Files in the fake Slack, mixed into :class:`tests.fakes.slack.FakeSlack`: the two-step upload
(``files.getUploadURLExternal``, the bytes, ``files.completeUploadExternal``), ``files.info``
and ``files.list``.

As on Slack (its maintainers describe it in slackapi/python-slack-sdk#1658, #1277 and
java-slack-sdk#1349):

- ``files.completeUploadExternal`` without ``channel_id`` shares the file nowhere: no message
  shows it and only its uploader may use it (in an image block's ``slack_file``);
- an upload is processed after ``files.completeUploadExternal`` answers: for
  :attr:`SlackFilesApi.file_processing_seconds` an image block naming it is refused
  (``invalid_blocks``, "invalid slack file") and ``files.info`` gives no ``mimetype`` or
  ``filetype`` yet, which is the sign Slack's developers point to for "ready".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tests.fakes.slack_model import FakeFile, FakeMessage, SlackError, new_id

Args = dict[str, Any]

FILES_PAGE_DEFAULT = 100
FILES_PAGE_MAX = 1000


class SlackFilesApi:
    """``files.*``: uploads, ``files.info``, ``files.list``."""

    files: dict[str, FakeFile]
    clock: Callable[[], float]
    file_processing_seconds: float

    if TYPE_CHECKING:

        @property
        def bot_user_id(self) -> str: ...

        @property
        def team_id(self) -> str: ...

        @property
        def base_url(self) -> str: ...

        def _add_message(
            self,
            channel: str,
            user: str,
            text: str,
            blocks: list[dict[str, Any]] | None = None,
            thread_ts: str | None = None,
            files: list[FakeFile] | None = None,
        ) -> FakeMessage: ...

    def files_methods(self) -> dict[str, Callable[[Args], Args]]:
        return {
            "files.getUploadURLExternal": self._upload_url,
            "files.completeUploadExternal": self._complete_upload,
            "files.info": self._file_info,
            "files.list": self._files_list,
        }

    def file_ready(self, file: FakeFile) -> bool:
        """Whether Slack has processed ``file`` (it can be shown in blocks)."""
        return file.data is not None and self.clock() >= file.ready_at

    def usable_by(self, file: FakeFile, user: str) -> bool:
        """Whether ``user`` may show ``file`` in a block: its uploader, or anyone once it is
        shared in a conversation."""
        return file.team == self.team_id and (file.user == user or file.channel is not None)

    def _upload_url(self, args: Args) -> Args:
        filename = str(args.get("filename") or "")
        try:
            length = int(args.get("length") or 0)
        except ValueError:
            length = 0
        if not filename or length <= 0:
            raise SlackError("invalid_arguments")
        file = FakeFile(
            new_id("F"), filename, length, self.bot_user_id, self.base_url, team=self.team_id
        )
        self.files[file.id] = file
        return {"upload_url": f"{self.base_url}/upload/{file.id}", "file_id": file.id}

    def _complete_upload(self, args: Args) -> Args:
        items = args.get("files")
        if not isinstance(items, list) or not items:
            raise SlackError("invalid_arguments")
        files: list[FakeFile] = []
        for item in items:
            file = self.files.get(str(item.get("id")))
            if file is None or file.data is None:
                raise SlackError("file_not_found")
            if len(file.data) != file.length:
                raise SlackError("file_upload_size_mismatch")
            file.title = str(item.get("title") or file.name)
            file.ready_at = self.clock() + self.file_processing_seconds
            files.append(file)
        channel = args.get("channel_id")
        if channel:
            thread_ts = args.get("thread_ts") or None
            message = self._add_message(
                str(channel),
                self.bot_user_id,
                str(args.get("initial_comment") or ""),
                thread_ts=thread_ts,
                files=files,
            )
            for file in files:
                file.channel, file.thread_ts, file.message_ts = (
                    message.channel,
                    thread_ts,
                    message.ts,
                )
        return {"files": [f.payload() for f in files]}

    def _file_info(self, args: Args) -> Args:
        file = self.files.get(str(args.get("file") or ""))
        if file is None or not self._visible(file):
            raise SlackError("file_not_found")
        return {"file": self._described(file)}

    def _files_list(self, args: Args) -> Args:
        """The files the caller can see, newest first, ``count`` a page."""
        user = str(args.get("user") or "")
        since = float(args.get("ts_from") or 0)
        until = float(args.get("ts_to") or "inf")
        images_only = "images" in str(args.get("types") or "all").split(",")
        count = min(int(args.get("count") or FILES_PAGE_DEFAULT), FILES_PAGE_MAX)
        page = max(int(args.get("page") or 1), 1)
        found = [
            f
            for f in self.files.values()
            if self._visible(f)
            and (not user or f.user == user)
            and since <= f.created <= until
            and (not images_only or f.mimetype.startswith("image/"))
        ]
        found.sort(key=lambda f: f.created, reverse=True)
        pages = max(1, -(-len(found) // count))
        shown = found[(page - 1) * count : page * count]
        return {
            "files": [self._described(f) for f in shown],
            "paging": {"count": count, "total": len(found), "page": page, "pages": pages},
        }

    def _visible(self, file: FakeFile) -> bool:
        return file.data is not None and self.usable_by(file, self.bot_user_id)

    def _described(self, file: FakeFile) -> Args:
        described = file.payload()
        if not self.file_ready(file):
            described.update(mimetype="", filetype="", pretty_type="")
        return described
