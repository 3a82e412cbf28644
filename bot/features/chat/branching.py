"""Versions of an edited message: the note ‹ n/m › under an edit, and switching between them.

An edit of a conversation's turn starts a branch (:mod:`storage.queries.branches`); before its
answer genbot posts a note saying which version of the message the conversation continues
from, with ‹ and › to switch. Switching makes that version's branch live (its turns, kept,
become the history again; the others are set aside) and redraws the note, quoting the version
switched to (on one line, shortened), since the message above the note may read another.
Nothing is posted again and nothing is hidden: the earlier version and its answers are still in
the channel. Taking
the set-aside messages out of the channel would cost a platform write per message (and genbot
cannot delete or hide its users' own messages on Slack or Discord), and bringing them back on
the next switch as much again; instead the redrawn note names the version the switch left out
and how many messages came after it, which stay in the channel but are no longer part of the
conversation.
"""

from __future__ import annotations

from bot.kernel import N_, Button, ButtonPress, MessageRef, OutMessage, UserError, _, ngettext
from bot.outbox import Edit, Outbox, WritePolicy
from storage import ChatMessage, Conversation, ConversationBranches, Fork

BRANCH_ACTION = "chat_branch"
GONE = N_("That version of the message is no longer on this conversation's path.")
QUOTE_MAX = 100
"""The most characters of a version a switch's note quotes."""


def quoted(text: str, limit: int = QUOTE_MAX) -> str:
    """A version of a message as the note quotes it: on one line, at most ``limit``
    characters (cut with "…")."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def branch_note(
    conversation_id: int,
    fork: Fork,
    number: int,
    left_out: tuple[int, int] | None = None,
    said: str = "",
) -> OutMessage:
    """The note for version ``number`` (1-based) of the message edited at ``fork``;
    ``left_out``: the version a switch left out and how many messages came after it;
    ``said``: what version ``number`` says, quoted (a switch's note: the message above it may
    read another version)."""
    total = len(fork.first_turns)
    if said.strip():
        text = _(
            "✏️ Version {number} of {total} of your message, “{text}”: the conversation "
            "continues from it.",
            number=number,
            total=total,
            text=quoted(said),
        )
    else:
        text = _(
            "✏️ Version {number} of {total} of your message: the conversation continues from it.",
            number=number,
            total=total,
        )
    if left_out is not None:
        version, after = left_out
        if after:
            gone = ngettext(
                "Version {version} and the {n} message after it stay in the channel but are no "
                "longer part of the conversation.",
                "Version {version} and the {n} messages after it stay in the channel but are no "
                "longer part of the conversation.",
                after,
                version=version,
            )
        else:
            gone = _(
                "Version {version} stays in the channel but is no longer part of the conversation.",
                version=version,
            )
        text = f"{text}\n{gone}"

    def to(version: int, label: str) -> Button:
        first = fork.first_turns[min(max(version, 1), total) - 1]
        return Button(
            label,
            BRANCH_ACTION,
            f"{conversation_id}.{first}",
            disabled=not 1 <= version <= total or version == number,
        )

    shown = Button(f"{number}/{total}", BRANCH_ACTION, f"{conversation_id}.0", disabled=True)
    return OutMessage(text, buttons=((to(number - 1, "‹"), shown, to(number + 1, "›")),))


def fork_of(forks: list[Fork], first_turn: int) -> tuple[Fork, int] | None:
    """The fork whose branch begins at ``first_turn``, and that branch's number."""
    for fork in forks:
        if first_turn in fork.first_turns:
            return fork, fork.first_turns.index(first_turn) + 1
    return None


async def switch_branch(
    branches: ConversationBranches,
    outbox: Outbox,
    event: ButtonPress,
    conversation: Conversation,
    turn: ChatMessage,
) -> None:
    """Make the branch that begins at ``turn`` live and redraw the pressed note."""
    found = fork_of(await branches.forks(conversation.id), turn.id)
    if found is None or not await branches.switch(conversation.id, found[0].fork_turn, found[1]):
        raise UserError(_(GONE))
    fork, number = found
    left_out = None
    if fork.live not in (0, number):
        after = await branches.shown_after(conversation.id, fork.first_turns[fork.live - 1])
        left_out = (fork.live, after)
    note = branch_note(conversation.id, fork, number, left_out, turn.content or "")
    pressed = MessageRef(event.place, event.message_id)
    await outbox.write(event.place, Edit(pressed, note), WritePolicy.RAISE)
