// A small, safe Markdown renderer for chat text.
// Everything is HTML-escaped first; only the tags produced below can appear in the output.
// Supports code fences (unterminated ones too, for streamed answers), inline code, bold, italic,
// strikethrough, links (http, https, mailto only), bare URLs, headings, quotes and lists.
// Control characters and bidirectional overrides are shown as escapes (see visible()).

import { t } from "./dom.js";

const ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
const MARK = "\u0000";
const INVISIBLE = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F\u202A-\u202E\u2066-\u2069]/g;

/** ``text`` with its control characters and bidirectional overrides and isolates shown as
 * escapes (``\u202E``): they can neither hide, reorder nor box the text around them. */
export function visible(text) {
  return String(text ?? "").replace(INVISIBLE, (c) => `\\u${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0")}`);
}

export function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

function safeHref(escapedUrl) {
  return /^(https?:\/\/|mailto:)/i.test(escapedUrl) ? escapedUrl : null;
}

function inline(escaped) {
  const slots = [];
  const sources = [];
  const keep = (html, source = html) => {
    sources.push(source);
    return `${MARK}${slots.push(html) - 1}${MARK}`;
  };
  const slot = new RegExp(`${MARK}(\\d+)${MARK}`, "g");
  const unkept = (text) => text.replace(slot, (_, i) => sources[Number(i)]);
  let s = escaped.replace(/`([^`\n]+)`/g, (whole, code) => keep(`<code>${code}</code>`, whole));
  s = s.replace(/\[([^\]\n]+)\]\(([^)\s]+)\)/g, (whole, label, url) => {
    const href = safeHref(unkept(url));
    if (!href) return unkept(whole);
    return keep(`<a href="${href}" target="_blank" rel="noopener noreferrer">${label}</a>`);
  });
  s = s.replace(new RegExp(`\\bhttps?://[^\\s<${MARK}]+`, "g"), (found) => {
    const url = found.split(/&(?:quot|#39|gt|lt);/)[0].replace(/[.,:;!?)\]]+$/, "");
    const link = `<a href="${url}" target="_blank" rel="noopener noreferrer">${url}</a>`;
    return keep(link) + found.slice(url.length);
  });
  s = s.replace(/\*\*(?=\S)([\s\S]*?\S)\*\*/g, "<strong>$1</strong>");
  s = s.replace(/(^|[^\w])__(?=\S)([\s\S]*?\S)__(?!\w)/g, "$1<u>$2</u>");
  s = s.replace(/~~(?=\S)([\s\S]*?\S)~~/g, "<del>$1</del>");
  s = s.replace(/(^|[^\w*])\*(?=[^\s*])([^*\n]*?[^\s*])\*(?!\*)/g, "$1<em>$2</em>");
  s = s.replace(/(^|[^\w])_(?=[^\s_])([^_\n]*?[^\s_])_(?!\w)/g, "$1<em>$2</em>");
  for (let depth = 0; depth <= slots.length && s.includes(MARK); depth++) {
    s = s.replace(slot, (_, i) => slots[Number(i)]);
  }
  return s;
}

function listItemMatch(line) {
  const bullet = /^\s*[-*+]\s+(.*)$/.exec(line);
  if (bullet) return { ordered: false, text: bullet[1] };
  const numbered = /^\s*(\d{1,9})[.)]\s+(.*)$/.exec(line);
  if (numbered) return { ordered: true, start: Number(numbered[1]), text: numbered[2] };
  return null;
}

function blocks(text) {
  const lines = text.split("\n");
  const out = [];
  let paragraph = [];
  const flush = () => {
    if (paragraph.length) out.push(`<p>${paragraph.map(inline).join("<br>")}</p>`);
    paragraph = [];
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const heading = /^(#{1,3})\s+(.*)$/.exec(line);
    const item = listItemMatch(line);
    if (!line.trim()) {
      flush();
    } else if (heading) {
      flush();
      const level = heading[1].length;
      out.push(`<h${level + 2}>${inline(heading[2])}</h${level + 2}>`);
    } else if (/^&gt;\s?/.test(line)) {
      flush();
      const quoted = [];
      while (i < lines.length && /^&gt;\s?/.test(lines[i])) {
        quoted.push(lines[i].replace(/^&gt;\s?/, ""));
        i++;
      }
      i--;
      out.push(`<blockquote>${blocks(quoted.join("\n"))}</blockquote>`);
    } else if (item) {
      flush();
      const tag = item.ordered ? "ol" : "ul";
      const start = item.ordered && item.start !== 1 ? ` start="${item.start}"` : "";
      const items = [];
      while (i < lines.length) {
        const next = listItemMatch(lines[i]);
        if (next && next.ordered === item.ordered) {
          items.push(inline(next.text));
        } else if (lines[i].trim() && /^\s{2,}/.test(lines[i]) && items.length) {
          items[items.length - 1] += `<br>${inline(lines[i].trim())}`;
        } else {
          break;
        }
        i++;
      }
      i--;
      out.push(`<${tag}${start}>${items.map((t) => `<li>${t}</li>`).join("")}</${tag}>`);
    } else {
      paragraph.push(line);
    }
  }
  flush();
  return out.join("");
}

function codeBlock(language, code) {
  const lang = language ? escapeHtml(language) : "";
  const label = lang || "code";
  const body = code.replace(/\n$/, "");
  return (
    `<div class="codeblock"><div class="codebar"><span>${label}</span>` +
    `<button type="button" class="copy-code">${escapeHtml(t("Copy"))}</button></div>` +
    `<pre><code${lang ? ` class="lang-${lang}"` : ""}>${body}</code></pre></div>`
  );
}

/** Markdown text → safe HTML. */
export function renderMarkdown(text) {
  const escaped = escapeHtml(visible(String(text || "").replace(/\r\n?/g, "\n")));
  const fence = /```([\w+#.-]*)[^\n]*\n?([\s\S]*?)(?:```|$)/g;
  let html = "";
  let last = 0;
  for (const match of escaped.matchAll(fence)) {
    html += blocks(escaped.slice(last, match.index));
    html += codeBlock(match[1], match[2]);
    last = match.index + match[0].length;
  }
  html += blocks(escaped.slice(last));
  return html;
}
