"""A :class:`~bot.kernel.Mention` formatted into a text is drawn by whoever shows it, and only a
mention made here is: a token written by anyone else, or one cut short, is left out."""

from __future__ import annotations

from bot.kernel import Mention, _, draw_mentions


def drawn(mention: Mention) -> str:
    return f"[{mention.kind} {mention.id}]"


def test_each_mention_is_drawn_where_the_text_puts_it() -> None:
    text = _("Asked by {user} in {where}", user=Mention.user("U1"), where=Mention.channel("C2"))
    assert "U1" in text and "<" not in text
    assert draw_mentions(text, drawn) == "Asked by [user U1] in [channel C2]"


def test_a_token_not_made_here_or_cut_short_is_left_out() -> None:
    sealed = str(Mention.user("U1"))
    forged = sealed.replace(sealed[1:13], "0" * 12)
    assert forged != sealed
    text = f"a fox {forged} by {sealed} {str(Mention.channel('C2'))[:6]}"
    assert draw_mentions(text, drawn) == "a fox  by [user U1] "
