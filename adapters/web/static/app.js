// The playground page: channels, history, the live event stream, threads, forms and images.

import { Composer } from "./composer.js";
import { openModal } from "./forms.js";
import { TAB, chooseLanguage, h, loadWords, pageLanguage, postJson, request, t } from "./dom.js";
import { visible } from "./markdown.js";
import { MessageView } from "./render.js";

await loadWords();

const CHANNEL_PATTERN = /^[a-z0-9][a-z0-9_-]{0,31}$/;
const DEFAULT_CHANNEL = "general";
const RETRY_FIRST_MS = 500;
const RETRY_MAX_MS = 8000;
const EXAMPLES = ["/imagine a lighthouse at dusk --ar 16:9", "/chat write a haiku about foxes", "/help"];

const $ = (selector) => document.querySelector(selector);
const state = {
  channel: DEFAULT_CHANNEL,
  thread: null,
  me: { id: "", name: "you" },
  seq: 0,
  instance: "",
  profile: { max_text: 4000 },
  limits: { max_upload_bytes: 8 * 1024 * 1024 },
  channels: [],
  messages: new Map(),
  working: new Map(),
  typingUntil: new Map(),
  source: null,
  resyncTimer: null,
  unread: new Map(),
  retryDelay: RETRY_FIRST_MS,
  dismissed: new Set(JSON.parse(sessionStorage.getItem("genbot-dismissed") || "[]")),
};

const viewContext = {
  me: () => state.me,
  lookup: (id) => state.messages.get(id),
  threadCount: (id) => [...state.messages.values()].filter((m) => m.thread === id).length,
  onButton: pressButton,
  onEdit: editMessage,
  onOpenThread: openThread,
  onImage: showImage,
  onDismiss: dismiss,
  onUnseen: () => ($("#new-below").hidden = false),
  onSeen: () => ($("#new-below").hidden = true),
  onJump: (id) => {
    const element = document.querySelector(`[data-id="${CSS.escape(id)}"]`);
    element?.scrollIntoView({ block: "center", behavior: "smooth" });
    element?.classList.add("flash");
    setTimeout(() => element?.classList.remove("flash"), 1200);
  },
};
const mainView = new MessageView($("#messages"), viewContext);
const threadView = new MessageView($("#thread-messages"), viewContext);
const composer = new Composer($("#composer-slot"), {
  // Translators: a narrow message box shows only what comes before " — ": keep " — " in both.
  placeholder: () => isDm() ? t("Message genbot — type / for commands") : t("Message #{channel} — @genbot to talk, / for commands", { channel: state.channel }),
  target: () => ({ channel: state.channel, thread: null }),
  limits: () => state.limits,
});
const threadComposer = new Composer($("#thread-composer-slot"), {
  placeholder: () => t("Reply in the thread"),
  target: () => ({ channel: state.channel, thread: state.thread }),
  limits: () => state.limits,
});

function toast(text) {
  const element = h("div", { class: "toast", role: "alert" }, text);
  $("#toasts").append(element);
  setTimeout(() => element.remove(), 6000);
}

function setConnection(status) {
  const element = $("#connection");
  element.className = `connection ${status}`;
  element.textContent = { live: t("live"), connecting: t("connecting…"), offline: t("reconnecting…") }[status];
}

function isDm() {
  return Boolean(state.dm) && state.channel === state.dm;
}

function intro() {
  const welcome = isDm()
    ? t("This is your direct conversation with genbot: every message is a turn, and only you see it. Create images with slash commands; attach images, text files or PDFs with +, drag and drop or paste.")
    : t("This is the start of the channel. Mention @genbot (or use /chat) and it answers in a thread; create images with slash commands; attach images with +, drag and drop or paste.");
  return h(
    "div",
    { class: "intro" },
    h("div", { class: "intro-icon" }, isDm() ? "@" : "#"),
    h("h2", {}, isDm() ? t("Direct messages with genbot") : t("Welcome to #{channel}!", { channel: state.channel })),
    h("p", {}, welcome),
    h("div", { class: "intro-examples" },
      ...EXAMPLES.map((example) =>
        h("button", {
          type: "button",
          class: "example",
          onclick: () => {
            composer.input.value = example;
            composer.onInput();
            composer.focus();
          },
        }, example))),
  );
}

function channelLink(name, label, kind) {
  const unread = state.unread.get(name);
  const classes = ["channel"];
  if (name === state.channel) classes.push("active");
  if (unread) classes.push("unread");
  return h("li", {},
    h("a", { href: `#${name}`, class: classes.join(" ") },
      h("span", { class: "hash", "aria-hidden": "true" }, kind), label,
      unread?.mention ? h("span", { class: "badge", title: t("A result for you") }, "1") : ""));
}

function renderChannels() {
  const names = [...new Set([...state.channels, ...(isDm() ? [] : [state.channel])])];
  $("#channel-list").replaceChildren(...names.map((name) => channelLink(name, name, "#")));
  $("#dm-list").replaceChildren(channelLink(state.dm, "genbot", "@"));
  const marks = [...state.unread.values()];
  const toggle = $("#drawer-toggle");
  toggle.classList.toggle("unread", marks.length > 0);
  toggle.classList.toggle("mention", marks.some((mark) => mark.mention));
  toggle.setAttribute("aria-label", marks.length ? t("Channels (unread)") : t("Channels"));
}

/** Something new in a channel this page does not show: mark it unread (and mentioned, when
 * it was a result or an answer for this user). */
function noteActivity(event) {
  if (event.channel === state.channel) return;
  const known = state.unread.get(event.channel);
  state.unread.set(event.channel, { mention: Boolean(known?.mention || event.mention === state.me.id) });
  if (!state.channels.includes(event.channel) && event.channel !== state.dm) state.channels.push(event.channel);
  renderChannels();
}

function place(message, options = {}) {
  if (message.kind === "ephemeral" && state.dismissed.has(message.id)) return;
  state.messages.set(message.id, message);
  if (message.thread) {
    mainView.refresh(message.thread);
    if (state.thread === message.thread) threadView.upsert(message, options);
  } else {
    mainView.upsert(message, options);
    if (state.thread === message.id) renderThreadHeader();
  }
}

function typingKey(thread) {
  return thread || "";
}

function renderTyping() {
  const now = Date.now();
  for (const [slot, thread] of [["#typing", null], ["#thread-typing", state.thread]]) {
    const key = typingKey(thread);
    const working = (state.working.get(key)?.size || 0) > 0;
    const typing = (state.typingUntil.get(key) || 0) > now;
    const element = $(slot);
    element.replaceChildren();
    if (working || typing) {
      element.append(h("span", { class: "dots", "aria-hidden": "true" }, h("i"), h("i"), h("i")), h("strong", {}, "genbot"), typing ? t(" is typing…") : t(" is working…"));
    }
  }
}

function onEvent(event) {
  if (event.type === "activity") return noteActivity(event);
  if (event.channel !== state.channel) return;
  if (event.seq && event.type !== "hello") state.seq = event.seq;
  switch (event.type) {
    case "hello":
      if (event.instance !== state.instance) return openChannel(state.channel);
      setConnection("live");
      break;
    case "reset":
      openChannel(state.channel);
      break;
    case "post":
    case "edit":
    case "ephemeral": {
      const message = event.message;
      const mine = message.author.id === state.me.id;
      const answersMe = state.messages.get(message.reply_to)?.author.id === state.me.id;
      const threadOpened = message.thread_info && !state.messages.get(message.id)?.thread_info;
      place(message, { forceScroll: mine && event.type === "post" });
      if (threadOpened && (mine || answersMe) && state.thread !== message.id) openThread(message.id);
      if (message.author.bot && event.type !== "ephemeral") state.typingUntil.delete(typingKey(message.thread));
      renderTyping();
      break;
    }
    case "delete": {
      const message = event.message;
      state.messages.delete(message.id);
      mainView.remove(message.id);
      threadView.remove(message.id);
      break;
    }
    case "modal":
      if (!event.tab || event.tab === TAB) openModal($("#modal"), event.modal);
      break;
    case "typing":
      state.typingUntil.set(typingKey(event.thread), Date.now() + event.seconds * 1000);
      renderTyping();
      break;
    case "working": {
      const key = typingKey(event.thread);
      const active = state.working.get(key) || new Set();
      if (event.active) active.add(event.event_id);
      else active.delete(event.event_id);
      state.working.set(key, active);
      renderTyping();
      break;
    }
  }
}

function connect() {
  state.source?.close();
  setConnection("connecting");
  const source = new EventSource(`/api/events?channel=${encodeURIComponent(state.channel)}&after=${state.seq}`);
  source.onmessage = (message) => onEvent(JSON.parse(message.data));
  source.onerror = () => {
    setConnection("offline");
    if (source.readyState === EventSource.CLOSED && state.source === source) scheduleResync();
  };
  state.source = source;
}

/** Load the channel again (and get a new session if it is gone) until it works: the event
 * stream was refused, for example because the server restarted without its history. */
function scheduleResync(delay = state.retryDelay) {
  clearTimeout(state.resyncTimer);
  state.resyncTimer = setTimeout(async () => {
    if (await openChannel(state.channel)) {
      state.retryDelay = RETRY_FIRST_MS;
    } else {
      setConnection("offline");
      state.retryDelay = Math.min(state.retryDelay * 2, RETRY_MAX_MS);
      scheduleResync();
    }
  }, delay);
}

/** Show ``channel``; false when it could not be loaded. A channel this user may not open
 * (someone else's direct messages, say after a new identity) opens #general instead, or the
 * user's own direct messages when it was a DM. */
async function openChannel(channel) {
  state.source?.close();
  state.channel = channel;
  closeThread();
  const result = await request(`/api/history?channel=${encodeURIComponent(channel)}`);
  if (!result.ok && result.status === 400 && channel !== DEFAULT_CHANNEL) {
    const opened = await openChannel(DEFAULT_CHANNEL);
    if (opened && channel.startsWith("dm-") && state.dm) return openChannel(state.dm);
    return opened;
  }
  if (!result.ok) {
    if (result.status !== 0) toast(result.body.error || t("The channel could not be loaded."));
    return false;
  }
  const body = result.body;
  const { me, seq, profile, limits, channels, instance, dm } = body;
  Object.assign(state, { me, seq, profile, limits, channels, instance, dm });
  $("#gallery-link").href = `/gallery?from=${encodeURIComponent(channel)}`;
  if (decodeURIComponent(location.hash.slice(1)).split("/")[0] !== channel) {
    history.replaceState(null, "", `#${channel}`);
  }
  state.messages.clear();
  state.working.clear();
  state.typingUntil.clear();
  $("#channel-name").textContent = isDm() ? "genbot" : channel;
  $("#channel-kind").textContent = isDm() ? "@" : "#";
  $("#me-name").textContent = body.me.name;
  $("#me-id").textContent = body.me.admin ? t("{id} · admin", { id: body.me.id }) : body.me.id;
  $("#admin-link").hidden = !body.me.admin;
  document.title = t("{place} · genbot playground", { place: isDm() ? "@genbot" : `#${channel}` });
  document.body.classList.remove("drawer-open");
  composer.refreshPlaceholder();
  composer.showError("");
  threadComposer.showError("");
  state.unread.delete(channel);
  renderChannels();
  mainView.clear(intro());
  for (const message of body.messages) state.messages.set(message.id, message);
  for (const message of body.messages) place(message, { forceScroll: true });
  mainView.scrollToBottom();
  renderTyping();
  connect();
  composer.focus();
  return true;
}

function renderThreadHeader() {
  const parent = state.messages.get(state.thread);
  $("#thread-name").textContent = visible(parent?.thread_info?.name || t("Thread"));
}

function openThread(id) {
  state.thread = id;
  $("#thread-panel").hidden = false;
  document.body.classList.add("with-thread");
  renderThreadHeader();
  threadView.clear();
  const parent = state.messages.get(id);
  if (parent) threadView.upsert({ ...parent, buttons: [], thread_info: null });
  for (const message of state.messages.values()) if (message.thread === id) threadView.upsert(message);
  renderTyping();
  threadComposer.focus();
}

function closeThread() {
  state.thread = null;
  $("#thread-panel").hidden = true;
  document.body.classList.remove("with-thread");
}

async function pressButton(message, button, element) {
  element.disabled = true;
  element.classList.add("pending");
  const result = await postJson("/api/button", {
    message_id: message.id,
    custom_id: button.custom_id,
    channel: message.channel,
  });
  setTimeout(() => {
    element.disabled = false;
    element.classList.remove("pending");
  }, result.ok ? 1200 : 0);
  if (!result.ok) toast(result.body.error || t("The button could not be pressed."));
}

/** Edit one's own message (genbot answers a conversation's turn again, on a new branch) in a
 * dialog with a multi-line editor: Ctrl+Enter (⌘+Enter) saves, Escape or Cancel leaves it. An
 * unchanged or empty text sends nothing; a refusal shows in the dialog, the text kept. */
function editMessage(message) {
  const dialog = $("#edit-dialog") || document.body.appendChild(h("dialog", { id: "edit-dialog", class: "modal edit-dialog" }));
  const lines = message.text.split("\n").length;
  const area = h("textarea", {
    class: "edit-text",
    name: "text",
    rows: Math.min(Math.max(lines + 1, 4), 14),
    "aria-label": t("Edit your message"),
  });
  area.value = message.text;
  const error = h("div", { class: "modal-error", role: "alert", hidden: true });
  const save = h("button", { type: "submit", class: "btn btn-primary" }, t("Save"));
  const form = h(
    "form",
    { class: "modal-form" },
    h("h2", {}, t("Edit your message")),
    area,
    error,
    h("div", { class: "modal-actions" },
      h("button", { type: "button", class: "btn btn-link", onclick: () => dialog.close() }, t("Cancel")), save),
  );
  area.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      form.requestSubmit();
    }
  });
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const text = area.value;
    if (text.trim() === "" || text === message.text) {
      dialog.close();
      return;
    }
    save.disabled = true;
    error.hidden = true;
    const result = await postJson("/api/edit", { message_id: message.id, text });
    save.disabled = false;
    if (dialog.firstElementChild !== form) return;
    if (result.ok) {
      dialog.close();
    } else {
      error.textContent = result.body.error || t("The message could not be edited.");
      error.hidden = false;
    }
  });
  if (dialog.open) dialog.close();
  dialog.replaceChildren(form);
  dialog.showModal();
  area.focus();
  area.setSelectionRange(area.value.length, area.value.length);
}

function dismiss(id) {
  state.dismissed.add(id);
  sessionStorage.setItem("genbot-dismissed", JSON.stringify([...state.dismissed].slice(-200)));
  mainView.remove(id);
  threadView.remove(id);
}

function showImage(url, alt) {
  const box = $("#lightbox");
  box.replaceChildren(
    h("img", { src: url, alt }),
    h("a", { class: "lightbox-open", href: url, target: "_blank", rel: "noopener" }, t("Open original")),
  );
  box.hidden = false;
}

function setUpDragAndDrop() {
  let depth = 0;
  const overlay = $("#drop-overlay");
  const hasFiles = (event) => [...(event.dataTransfer?.types || [])].includes("Files");
  window.addEventListener("dragenter", (event) => {
    if (!hasFiles(event)) return;
    depth += 1;
    overlay.hidden = false;
  });
  window.addEventListener("dragleave", () => {
    depth = Math.max(0, depth - 1);
    if (!depth) overlay.hidden = true;
  });
  window.addEventListener("dragover", (event) => {
    if (hasFiles(event)) event.preventDefault();
  });
  window.addEventListener("drop", (event) => {
    if (!hasFiles(event)) return;
    event.preventDefault();
    depth = 0;
    overlay.hidden = true;
    const files = [...event.dataTransfer.files];
    const inThread = state.thread && event.target.closest?.("#thread-panel");
    (inThread ? threadComposer : composer).addFiles(files);
  });
}

function setUpPage() {
  $("#thread-close").addEventListener("click", closeThread);
  $("#new-below").addEventListener("click", () => {
    mainView.scrollToBottom();
    $("#new-below").hidden = true;
  });
  $("#drawer-toggle").addEventListener("click", () => document.body.classList.toggle("drawer-open"));
  $("#drawer-shade").addEventListener("click", () => document.body.classList.remove("drawer-open"));
  $("#lightbox").addEventListener("click", () => ($("#lightbox").hidden = true));
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape") $("#lightbox").hidden = true;
  });
  document.addEventListener("click", async (event) => {
    const copy = event.target.closest?.(".copy-code");
    if (!copy) return;
    const code = copy.closest(".codeblock").querySelector("code").textContent;
    try {
      await navigator.clipboard.writeText(code);
      copy.textContent = t("Copied!");
    } catch {
      copy.textContent = t("Copy failed");
    }
    setTimeout(() => (copy.textContent = t("Copy")), 1500);
  });
  setUpNewChannel();
  window.addEventListener("hashchange", () => followHash());
  document.addEventListener("click", (event) => {
    const link = event.target.closest?.("a[href]");
    if (!link || link.origin !== location.origin || !link.hash) return;
    event.preventDefault();
    if (location.hash === link.hash) followHash();
    else location.hash = link.hash;
  });
  setUpDragAndDrop();
  setInterval(renderTyping, 1000);
}

/** The + next to "Text channels": name a new channel in place (it exists once posted in). */
function setUpNewChannel() {
  const form = $("#new-channel");
  const input = form.elements.name;
  const error = form.querySelector(".new-channel-error");
  const close = () => {
    form.hidden = true;
    error.hidden = true;
    input.value = "";
  };
  $("#add-channel").addEventListener("click", () => {
    form.hidden = false;
    input.focus();
  });
  input.addEventListener("keydown", (event) => {
    if (event.key === "Escape") close();
  });
  input.addEventListener("blur", () => {
    if (!input.value.trim()) close();
  });
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const name = input.value.trim().toLowerCase();
    if (!CHANNEL_PATTERN.test(name)) {
      error.textContent = t("Use 1 to 32 lowercase letters, digits, - or _ (starting with a letter or digit).");
      error.hidden = false;
      return;
    }
    close();
    location.hash = name;
  });
}

/** ``#channel`` opens a channel; ``#channel/message-id`` opens it at that message. */
async function followHash() {
  const [name, messageId] = decodeURIComponent(location.hash.slice(1)).split("/");
  if (!CHANNEL_PATTERN.test(name)) return;
  if (name !== state.channel) await openChannel(name);
  if (messageId) viewContext.onJump(messageId);
}

/** The language switch under the user's name: the languages genbot speaks, or the browser's. */
function setUpLanguageSwitch() {
  const { language, languages } = pageLanguage();
  const chosen = document.cookie.split("; ").some((part) => part.startsWith("genbot_language="));
  const select = $("#language");
  select.replaceChildren(
    h("option", { value: "", selected: !chosen }, t("Browser language")),
    ...languages.map((known) => h("option", { value: known.tag, selected: chosen && known.tag === language }, known.name)),
  );
  select.addEventListener("change", () => chooseLanguage(select.value));
}

async function main() {
  setUpLanguageSwitch();
  setUpPage();
  const commands = await request("/api/commands");
  if (commands.ok) {
    composer.setCommands(commands.body.commands);
    threadComposer.setCommands(commands.body.commands);
  }
  const fromHash = decodeURIComponent(location.hash.slice(1)).split("/")[0];
  if (!(await openChannel(CHANNEL_PATTERN.test(fromHash) ? fromHash : DEFAULT_CHANNEL))) {
    scheduleResync();
    return;
  }
  if (location.hash.includes("/")) followHash();
}

main();
