// Message rendering: one element per message, Discord style (avatar, name, time, Markdown text,
// inline images, rows of buttons, thread link, "only you can see this" for ephemeral replies).

import { formatTime, h, icon, t, tn } from "./dom.js";
import { renderMarkdown, visible } from "./markdown.js";

const GROUP_SECONDS = 7 * 60;
const STICKY_PIXELS = 140;

function authorName(author, me) {
  if (author.bot) return author.name;
  return author.id === me.id ? t("you") : t("guest {id}", { id: author.id.slice(-4) });
}

const GUEST_COLOURS = ["#e67e22", "#1abc9c", "#e91e63", "#9b59b6", "#3498db", "#f1c40f"];

/** The avatar of ``author``: genbot's logo, "Y" for you, a guest's first id character on a
 * colour of its own (set through ``style``, not an inline style attribute, which the page's
 * security policy refuses). */
function avatar(author, me, small = false) {
  if (author.bot) return h("div", { class: "avatar bot", "aria-hidden": "true" });
  if (author.id === me.id) return h("div", { class: "avatar me", "aria-hidden": "true" }, small ? "" : "Y");
  const tag = author.id.slice(-4);
  const colour = GUEST_COLOURS[parseInt(tag, 16) % GUEST_COLOURS.length] || GUEST_COLOURS[0];
  const element = h("div", { class: "avatar guest", "aria-hidden": "true" }, small ? "" : tag[0].toUpperCase());
  element.style.background = colour;
  return element;
}

function snippet(message) {
  const text = visible(message.text || "").replace(/[*_~`]+/g, "").replace(/\s+/g, " ").trim();
  if (text) return text.length > 90 ? `${text.slice(0, 90)}…` : text;
  return message.images.length ? t("🖼 image") : "…";
}

/** A message's ⋯ menu: the actions genbot puts in a menu (ℹ️ Image info), each a press. */
function messageMenu(items, press, foreign) {
  const toggle = h("button", { type: "button", class: `btn btn-secondary menu-toggle${foreign ? " foreign" : ""}`, title: t("More"), "aria-label": t("More"), "aria-haspopup": "menu", "aria-expanded": "false" }, "⋯");
  const list = h("div", { class: "message-menu", role: "menu", hidden: true },
    ...items.map((button) => h("button", {
      type: "button", class: "menu-item", role: "menuitem", "data-custom-id": button.custom_id,
      onclick: () => { closeMenus(); press(button, toggle); },
    }, button.menu)));
  toggle.addEventListener("click", (event) => {
    event.stopPropagation();
    const opening = list.hidden;
    closeMenus();
    list.hidden = !opening;
    toggle.setAttribute("aria-expanded", String(opening));
  });
  return h("span", { class: "menu-anchor" }, toggle, list);
}

function closeMenus() {
  for (const open of document.querySelectorAll(".message-menu:not([hidden])")) {
    open.hidden = true;
    open.previousElementSibling?.setAttribute("aria-expanded", "false");
  }
}

document.addEventListener("click", closeMenus);
document.addEventListener("keydown", (event) => { if (event.key === "Escape") closeMenus(); });

export class MessageView {
  /**
   * @param list the scrolling element holding the messages
   * @param context {me(), lookup(id), threadCount(id), onButton(message, button, element),
   *                 onOpenThread(id), onImage(url, alt), onDismiss(id), onJump(id)}
   */
  constructor(list, context) {
    this.list = list;
    this.context = context;
    this.order = [];
    this.elements = new Map();
    this.shown = new Map();
    this.stick = true;
    this.programmaticTop = -1;
    list.addEventListener("scroll", () => {
      if (Math.abs(this.list.scrollTop - this.programmaticTop) < 2) return;
      this.stick = this.nearBottom();
      if (this.stick) this.context.onSeen?.();
    });
    new ResizeObserver(() => {
      if (this.stick) this.scrollToBottom();
    }).observe(list);
  }

  clear(intro) {
    this.order = [];
    this.elements.clear();
    this.shown.clear();
    this.list.replaceChildren(...(intro ? [intro] : []));
  }

  nearBottom() {
    return this.list.scrollHeight - this.list.scrollTop - this.list.clientHeight < STICKY_PIXELS;
  }

  scrollToBottom() {
    this.list.scrollTop = this.list.scrollHeight;
    this.programmaticTop = this.list.scrollTop;
    this.stick = true;
  }

  has(id) {
    return this.elements.has(id);
  }

  /** Insert or replace a message; keeps the view pinned to the bottom when it was, else
   * tells the context (onUnseen) when genbot's new message, reply to you or result lands out
   * of sight. A new message takes its place in the channel's order (by its time: a command
   * shown to everyone only once genbot answers it comes in after later messages), grouped with
   * the message before it, and the one after it is grouped anew. */
  upsert(message, { forceScroll = false } = {}) {
    const pinned = forceScroll || this.stick;
    const existing = this.elements.get(message.id);
    const news = message.author.bot && (!existing || message.images.length > 0);
    if (!pinned && news && !message.deleted) this.context.onUnseen?.();
    let at = this.order.indexOf(message.id);
    if (at < 0) at = this.placeOf(message);
    const element = this.render(message, this.groups(this.shownAt(at - 1), message));
    this.shown.set(message.id, message);
    if (existing) {
      this.elements.set(message.id, replaceKeepingButtons(existing, element));
    } else {
      this.elements.set(message.id, element);
      const next = this.elements.get(this.order[at]);
      this.order.splice(at, 0, message.id);
      if (next) next.before(element);
      else this.list.append(element);
    }
    this.regroup(at + 1);
    if (pinned) this.scrollToBottom();
  }

  /** Where a new message goes in the order: after every message not younger than it. */
  placeOf(message) {
    let at = this.order.length;
    while (at > 0 && this.shownAt(at - 1).created > message.created) at -= 1;
    return at;
  }

  shownAt(at) {
    return at >= 0 && at < this.order.length ? this.shown.get(this.order[at]) : null;
  }

  /** Render the message at ``at`` again when its neighbour above changed whether it groups. */
  regroup(at) {
    const message = this.shownAt(at);
    if (!message) return;
    const grouped = this.groups(this.shownAt(at - 1), message);
    const existing = this.elements.get(message.id);
    if (existing.classList.contains("grouped") === grouped) return;
    this.elements.set(message.id, replaceKeepingButtons(existing, this.render(message, grouped)));
  }

  remove(id) {
    this.elements.get(id)?.remove();
    this.elements.delete(id);
    this.shown.delete(id);
    const at = this.order.indexOf(id);
    if (at < 0) return;
    this.order.splice(at, 1);
    this.regroup(at);
  }

  refresh(id) {
    const message = this.context.lookup(id);
    if (message && this.elements.has(id)) this.upsert(message);
  }

  groups(previous, message) {
    return Boolean(
      previous &&
        previous.author.id === message.author.id &&
        previous.kind !== "ephemeral" &&
        message.kind !== "ephemeral" &&
        !previous.private &&
        !message.private &&
        !message.reply_to &&
        message.created - previous.created < GROUP_SECONDS,
    );
  }

  render(message, grouped) {
    const me = this.context.me();
    const classes = ["message", `kind-${message.kind}`];
    if (grouped) classes.push("grouped");
    if (message.mention && message.mention === me.id) classes.push("mentioned");
    const body = h("div", { class: "message-body" });
    if (!grouped) {
      body.append(
        h("div", { class: "meta" },
          h("span", { class: "name" + (message.author.bot ? " bot-name" : "") }, authorName(message.author, me)),
          message.author.bot ? h("span", { class: "bot-tag" }, "BOT") : "",
          h("time", { datetime: new Date(message.created * 1000).toISOString() }, formatTime(message.created)),
          message.edited && message.kind === "user" ? h("span", { class: "edited-tag" }, "(edited)") : ""),
      );
    }
    const text = this.renderText(message, me);
    if (text) body.append(text);
    if (message.images.length) body.append(this.renderImages(message));
    if (message.buttons.length) body.append(this.renderButtons(message));
    if (message.thread_info) body.append(this.renderThreadLink(message));
    if (message.kind === "user" && !message.command && message.author.id === me.id) {
      body.append(
        h("button", { type: "button", class: "link-button edit-message", onclick: () => this.context.onEdit(message) }, t("Edit")),
      );
    }
    if (message.kind === "ephemeral") {
      body.append(
        h("div", { class: "ephemeral-note" },
          icon("eye", 14),
          t("Only you can see this · "),
          h("button", { type: "button", class: "link-button", onclick: () => this.context.onDismiss(message.id) }, t("Dismiss message"))),
      );
    } else if (message.private) {
      body.append(h("div", { class: "ephemeral-note" }, icon("eye", 14), t("Only you can see this")));
    }
    const element = h(
      "article",
      { class: classes.join(" "), "data-id": message.id, "data-author": message.author.id },
      this.renderReply(message, me),
      grouped
        ? h("span", { class: "gutter-time" }, new Date(message.created * 1000).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" }))
        : avatar(message.author, me),
      body,
    );
    return element;
  }

  renderReply(message, me) {
    if (!message.reply_to) return "";
    const original = this.context.lookup(message.reply_to);
    if (!original) return "";
    return h(
      "div",
      { class: "reply", onclick: () => this.context.onJump(original.id) },
      h("span", { class: "reply-spine", "aria-hidden": "true" }),
      avatar(original.author, me, true),
      h("span", { class: "reply-name" }, authorName(original.author, me)),
      h("bdi", { class: "reply-text" }, snippet(original)),
    );
  }

  renderText(message, me) {
    if (message.kind === "user" && message.command) {
      const usage = "/" + message.command.replace(".", " ");
      const rest = visible(message.text.slice(usage.length).trim());
      return h("div", { class: "text", dir: "auto" },
        h("span", { class: "command-pill" }, usage), rest ? " " : "", rest ? h("bdi", {}, rest) : "");
    }
    if (!message.text && !message.mention) return null;
    const element = h("div", { class: "text markdown", dir: "auto" });
    element.innerHTML = renderMarkdown(message.text);
    if (message.mention) {
      const name = message.mention === me.id ? t("you") : t("guest {id}", { id: message.mention.slice(-4) });
      const pill = h("span", { class: "mention" }, `@${name}`);
      const first = element.firstElementChild;
      if (first && first.tagName === "P") first.prepend(pill, " ");
      else element.prepend(pill);
    }
    return element;
  }

  renderImages(message) {
    return h(
      "div",
      { class: "images" + (message.images.length > 1 ? " several" : "") },
      ...message.images.map((image) => {
        if (!image.content_type.startsWith("image/")) {
          return h("a", { class: "file-link", href: image.url, target: "_blank", rel: "noopener" }, `📄 ${image.filename}`);
        }
        const box = message.images.length > 1 ? 256 : 520;
        const scale = image.width && image.height ? Math.min(1, box / image.width, box / image.height) : 1;
        const size = image.width && image.height
          ? { width: Math.round(image.width * scale), height: Math.round(image.height * scale) }
          : {};
        const img = h("img", { src: image.url, alt: image.filename, ...size, decoding: "async" });
        img.addEventListener("load", () => {
          if (this.stick) this.scrollToBottom();
        }, { once: true });
        return h(
          "a",
          {
            class: "image-link",
            href: image.url,
            target: "_blank",
            rel: "noopener",
            onclick: (event) => {
              event.preventDefault();
              this.context.onImage(image.url, image.filename);
            },
          },
          img,
        );
      }),
    );
  }

  renderButtons(message) {
    const foreign = message.mention && message.mention !== this.context.me().id;
    const title = foreign ? t("Only the person who started this job can use its buttons (unless the channel is open)") : null;
    const press = (button, element) => this.context.onButton(message, button, element);
    const rows = message.buttons
      .map((row) => row.filter((button) => !button.menu))
      .filter((row) => row.length)
      .map((row) => h(
        "div",
        { class: "button-row" },
        ...row.map((button) => {
          const element = h("button", { type: "button", class: `btn btn-${button.style}${foreign ? " foreign" : ""}`, "data-custom-id": button.custom_id, title, disabled: button.disabled }, button.label);
          element.disabled = Boolean(button.disabled);
          element.addEventListener("click", () => press(button, element));
          return element;
        }),
      ));
    const items = message.buttons.flat().filter((button) => button.menu && !button.disabled);
    if (items.length) {
      const menu = messageMenu(items, press, foreign);
      if (rows.length) rows[rows.length - 1].append(menu);
      else rows.push(h("div", { class: "button-row" }, menu));
    }
    const key = JSON.stringify([message.buttons, Boolean(foreign)]);
    return h("div", { class: "button-rows", "data-key": key }, ...rows);
  }

  renderThreadLink(message) {
    const count = this.context.threadCount(message.id);
    return h(
      "button",
      { type: "button", class: "thread-link", onclick: () => this.context.onOpenThread(message.id) },
      icon("thread", 18),
      h("bdi", { class: "thread-name" }, visible(message.thread_info.name)),
      h("span", { class: "thread-count" }, tn("{n} message", "{n} messages", count)),
      h("span", { class: "thread-open" }, t("Open ›")),
    );
  }
}

/** Show ``element`` (a message rendered again) in place of ``existing``; returns the one shown.
 * When its buttons are as they were, ``existing`` stays and takes ``element``'s content and
 * attributes around its button rows, which never leave the page: a press on ⏹ Stop whose mouse
 * went down before an edit of the streaming answer and up after it is still a click (Chrome
 * drops the click of a button taken out of the page between the two, even if put back). */
function replaceKeepingButtons(existing, element) {
  const before = existing.querySelector(".button-rows");
  const after = element.querySelector(".button-rows");
  if (!before || !after || before.dataset.key !== after.dataset.key) {
    existing.replaceWith(element);
    return element;
  }
  let kept = before;
  let fresh = after;
  while (fresh !== element && kept !== existing) {
    const keptParent = kept.parentElement;
    const freshParent = fresh.parentElement;
    for (const child of [...keptParent.childNodes]) if (child !== kept) child.remove();
    const siblings = [...freshParent.childNodes];
    const at = siblings.indexOf(fresh);
    kept.before(...siblings.slice(0, at));
    kept.after(...siblings.slice(at + 1));
    for (const { name } of [...keptParent.attributes]) keptParent.removeAttribute(name);
    for (const { name, value } of freshParent.attributes) keptParent.setAttribute(name, value);
    kept = keptParent;
    fresh = freshParent;
  }
  return existing;
}
