"""How a text names one of genbot's commands where it is read.

A sentence that names a command takes it as a value, never as literal text in the catalog::

    _("Choose another model with {settings} model.", settings=named("settings"))

:func:`named` writes it as the platform of the event being handled does: Slack spells some of
genbot's commands its own way (``/genbot settings``), Discord writes command mentions (one renders
in the reader's own language and runs the command when clicked), and everywhere else the
catalogue's name stands, in inline code (```/settings```). The adapter decides, through its
surface (:class:`bot.kernel.surface.NamesCommands`); the router hands the event's place's way
to :func:`bot.kernel.i18n.speaking` around its handling, asked only when a text names a command.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field


@dataclass(frozen=True)
class CommandNames:
    """How one place's platform names genbot's commands, by catalogue name (``settings``,
    ``diffusion.txt2img``).

    ``spellings``: what users type instead of the catalogue's name, without the slash
    (Slack: ``{"settings": "genbot settings"}``); ``mentions``: a command written whole as the
    platform's command mention, rendered by the platform (Discord's ``</settings:123>``, with the
    registered command's id).
    """

    spellings: Mapping[str, str] = field(default_factory=dict)
    mentions: Mapping[str, str] = field(default_factory=dict)

    def typed(self, name: str) -> str:
        """What a user types to run ``name``: ``/settings``, ``/genbot settings``,
        ``/diffusion txt2img``."""
        return "/" + (self.spellings.get(name) or name.replace(".", " "))

    def mention(self, name: str) -> str | None:
        """The platform's command mention of ``name``, where it has one."""
        return self.mentions.get(name)

    def named(self, name: str) -> str:
        """``name`` as a sentence names it: its mention, else what is typed in inline code."""
        return self.mention(name) or f"`{self.typed(name)}`"

    def written(self, name: str, rest: str) -> str:
        """``name`` run with ``rest`` (its arguments) as a sentence shows it: in inline code
        (```/settings --scope channel --top-p …```), or the mention and ``rest`` in inline code."""
        mention = self.mention(name)
        if mention is None:
            return f"`{self.typed(name)} {rest}`" if rest else f"`{self.typed(name)}`"
        return f"{mention} `{rest}`" if rest else mention


CATALOGUE = CommandNames()
"""The catalogue's own names, where no platform says otherwise (outside an event, in tests)."""


PLACE_NAMES: ContextVar[Callable[[], CommandNames] | None] = ContextVar(
    "genbot_command_names", default=None
)
"""How the place of the event being handled names genbot's commands, asked when a text names
one; :func:`bot.kernel.i18n.speaking` sets it (None: outside an event, or its platform did not
say)."""


def command_names() -> CommandNames:
    """How the place of the event being handled names genbot's commands."""
    names = PLACE_NAMES.get()
    return CATALOGUE if names is None else names()


def named(name: str, /) -> str:
    """Catalogue command ``name`` as a sentence names it where the event being handled is read
    (see :meth:`CommandNames.named`)."""
    return command_names().named(name)


def written(name: str, rest: str, /) -> str:
    """Catalogue command ``name`` run with ``rest`` as a sentence shows it where the event being
    handled is read (see :meth:`CommandNames.written`)."""
    return command_names().written(name, rest)
