"""genbot's chat engine: conversations with the provider's chat models.

Where conversations live (:mod:`bot.features.chat.scoping`): a DM; a thread opened on a mention of
the bot (or by ``/chat`` in a channel); a reply chain in a channel. History is read from storage
once per message — only the newest turns that can fit, by their stored token counts
(:mod:`bot.features.chat.history`) — so conversations survive restarts. An answer's turn is stored
before its first message is posted and each message is linked as it is posted
(:mod:`bot.features.chat.answer`), so replies to a partly posted answer still find the conversation.

What is settable where (:mod:`bot.features.chat.requests`):

- ``/settings model`` (per user; admins: per channel or workspace with ``scope``, see
  :mod:`bot.features.account`), ``/chat model`` (per conversation, sticks), else
  ``ChatDefaults.model``; ``llm-4*`` needs the Developer plan;
- ``/settings system_prompt`` (per channel; admins: per workspace), ``/chat system`` (per
  conversation, sticks), else ``ChatDefaults.system_prompt``;
- ``/settings temperature`` (per user, channel, workspace), ``/chat temperature`` (this
  request);
- ``/chat max_tokens`` (this request), else ``ChatDefaults.max_tokens``;
- ``top_p``, ``presence_penalty``, ``frequency_penalty``, ``stop``, ``logit_bias``:
  ``ChatDefaults`` (configuration) only; ``n`` is 1.

Function calling (:mod:`bot.features.chat.tools`): ``generate_image`` and ``describe_image``, served
by an :class:`~bot.features.chat.tools.ImageTools` implementation; :func:`genbot.compose.build_core`
wires the chat engine to the job engine's tools (``ChatImageTools(jobs.chat_jobs)``).
"""

from bot.features.chat.engine import VISION_ACTION, VISION_LABEL, ChatEngine
from bot.features.chat.requests import (
    DEFAULT_MODEL,
    DEFAULT_SYSTEM_PROMPT,
    VISION_MODEL,
    ChatDefaults,
    ChatOverrides,
    ChatParams,
)
from bot.features.chat.tools import (
    DESCRIBE_IMAGE,
    FUNCTIONS,
    GENERATE_IMAGE,
    ChatImageTools,
    ImageTools,
    JobHandle,
    ToolContext,
)

__all__ = [
    "DEFAULT_MODEL",
    "DEFAULT_SYSTEM_PROMPT",
    "DESCRIBE_IMAGE",
    "FUNCTIONS",
    "GENERATE_IMAGE",
    "VISION_ACTION",
    "VISION_LABEL",
    "VISION_MODEL",
    "ChatDefaults",
    "ChatEngine",
    "ChatImageTools",
    "ChatOverrides",
    "ChatParams",
    "ImageTools",
    "JobHandle",
    "ToolContext",
]
