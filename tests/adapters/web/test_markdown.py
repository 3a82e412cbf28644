"""The playground's Markdown renderer, run in Chromium: inline code inside a link's address or
label, or after a bare URL, never leaves placeholder bytes or markup in an ``href``."""

from __future__ import annotations

from adapters.web import WebAdapter
from tests.adapters.web.browser import chromium

RENDER = """async (texts) => {
    const { renderMarkdown } = await import('/static/markdown.js');
    return texts.map((text) => renderMarkdown(text));
}"""
LINK = '" target="_blank" rel="noopener noreferrer">'


async def test_code_spans_in_links_render_as_text_not_placeholders(adapter: WebAdapter) -> None:
    texts = [
        "[a](https://x.example/`y`)",
        "[`code`](https://x.example/)",
        "https://x.example/`y`",
        "[x](javascript:`alert(1)`)",
    ]
    async with chromium() as browser:
        page = await browser.new_page()
        await page.goto(adapter.url + "/")
        rendered = await page.evaluate(RENDER, texts)
    assert rendered == [
        f'<p><a href="https://x.example/`y`{LINK}a</a></p>',
        f'<p><a href="https://x.example/{LINK}<code>code</code></a></p>',
        f'<p><a href="https://x.example/{LINK}https://x.example/</a><code>y</code></p>',
        "<p>[x](javascript:`alert(1)`)</p>",
    ]
    assert not any("\x00" in html for html in rendered)
