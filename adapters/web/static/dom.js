// Small helpers shared by the playground's modules: element building, JSON requests and the
// page's words in the user's language.

let words = { language: "en", plurals: ["one", "other"], messages: {}, languages: [] };
const LANGUAGE_COOKIE = "genbot_language";

/** Fill {name} fields of ``text`` with ``values``. */
function fill(text, values) {
  return text.replace(/\{(\w+)\}/g, (whole, name) => (name in values ? String(values[name]) : whole));
}

/** ``message`` in the page's language (English when it has no translation), its {name} fields
 * filled with ``values``. Every word the page shows goes through t() or tn(): `make messages`
 * extracts them into the catalog. */
export function t(message, values = {}) {
  const forms = words.messages[message];
  return fill(forms ? forms[0] : message, values);
}

/** The form of ``singular``/``plural`` the page's language uses for ``n``, filled with ``n``
 * and ``values``. */
export function tn(singular, plural, n, values = {}) {
  const forms = words.messages[singular];
  let text = n === 1 ? singular : plural;
  if (forms) {
    const index = words.plurals.indexOf(new Intl.PluralRules(words.language).select(n));
    text = forms[index] ?? forms[forms.length - 1];
  }
  return fill(text, { n, ...values });
}

/** The page's language (a tag genbot speaks) and the languages the switch offers. */
export function pageLanguage() {
  return { language: words.language, languages: words.languages };
}

/** Load the page's words (``/api/messages``, in the language of the switch's cookie, else the
 * browser's), then translate the page's own HTML: elements marked ``data-t`` (their text),
 * ``data-t-html`` (their markup: a catalog sentence keeps its tags), ``data-t-placeholder``,
 * ``data-t-title`` and ``data-t-label`` (aria-label). */
export async function loadWords() {
  const result = await request("/api/messages");
  if (result.ok) words = result.body;
  document.documentElement.lang = words.language;
  for (const element of document.querySelectorAll("[data-t]")) {
    element.textContent = t(element.textContent.trim());
  }
  for (const element of document.querySelectorAll("[data-t-html]")) {
    element.innerHTML = t(element.innerHTML.trim());
  }
  for (const [marker, attribute] of [["data-t-placeholder", "placeholder"], ["data-t-title", "title"], ["data-t-label", "aria-label"]]) {
    for (const element of document.querySelectorAll(`[${marker}]`)) {
      element.setAttribute(attribute, t(element.getAttribute(attribute)));
    }
  }
}

/** Speak ``language`` from now on (``""``: the browser's), kept in a cookie the server reads. */
export function chooseLanguage(language) {
  const age = language ? 365 * 24 * 3600 : 0;
  document.cookie = `${LANGUAGE_COOKIE}=${encodeURIComponent(language)}; path=/; max-age=${age}; samesite=strict`;
  location.reload();
}

/** Build an element: h("div", {class: "x", onclick: fn}, child, "text", ...). */
export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") {
      element.addEventListener(name.slice(2), value);
    } else if (value === true) {
      element.setAttribute(name, "");
    } else {
      element.setAttribute(name, String(value));
    }
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === "" || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return element;
}

/** POST JSON; resolves to {ok, status, body}; a network failure becomes a readable error. */
export async function postJson(url, payload) {
  return request(url, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(payload),
  });
}

/** This page's own id: forms the server opens for what this tab did show here only. */
export const TAB = crypto.randomUUID ? crypto.randomUUID() : `${Date.now()}-${Math.random().toString(36).slice(2)}`;

let renewing = null;

/** Get a new session the way a page load does (once, however many requests ask): the old one
 * is gone (the server restarted without its history, or the cookie was dropped). */
async function renewSession() {
  renewing ??= fetch("/", { credentials: "same-origin", cache: "no-store" })
    .then((response) => response.ok)
    .catch(() => false)
    .finally(() => setTimeout(() => (renewing = null), 1000));
  return renewing;
}

async function fetchJson(url, init) {
  let response;
  try {
    const headers = { "X-Genbot-Tab": TAB, ...(init.headers || {}) };
    response = await fetch(url, { credentials: "same-origin", ...init, headers });
  } catch {
    return { ok: false, status: 0, body: { error: t("The playground server cannot be reached.") } };
  }
  let body = {};
  try {
    body = await response.json();
  } catch {
    body = { error: t("The server answered {status} without details.", { status: response.status }) };
  }
  return { ok: response.ok, status: response.status, body };
}

/** A request to the playground's API; resolves to {ok, status, body}. A request refused for
 * want of a session gets a new one and is sent once more. */
export async function request(url, init = {}) {
  const result = await fetchJson(url, init);
  if (result.status === 401 && result.body.code === "no_session" && (await renewSession())) {
    return fetchJson(url, init);
  }
  return result;
}

export function formatSize(bytes) {
  return bytes >= 1024 * 1024 ? `${(bytes / 1024 / 1024).toFixed(1)} MiB` : `${Math.ceil(bytes / 1024)} KiB`;
}

export function formatTime(seconds) {
  const date = new Date(seconds * 1000);
  const locale = words.language === "en" ? [] : words.language;
  const time = date.toLocaleTimeString(locale, { hour: "2-digit", minute: "2-digit" });
  const today = new Date().toDateString() === date.toDateString();
  return today ? t("Today at {time}", { time }) : `${date.toLocaleDateString(locale)} ${time}`;
}

const SVG = "http://www.w3.org/2000/svg";
const ICONS = {
  eye: "M12 5C6.5 5 2.7 9.1 1.5 12c1.2 2.9 5 7 10.5 7s9.3-4.1 10.5-7C21.3 9.1 17.5 5 12 5zm0 11.5a4.5 4.5 0 1 1 0-9 4.5 4.5 0 0 1 0 9zm0-2.5a2 2 0 1 0 0-4 2 2 0 0 0 0 4z",
  thread: "M5 3h14a2 2 0 0 1 2 2v9a2 2 0 0 1-2 2h-7l-5 4v-4H5a2 2 0 0 1-2-2V5a2 2 0 0 1 2-2zm2 4v2h10V7H7zm0 4v2h7v-2H7z",
  send: "M3.4 20.4 21 12 3.4 3.6 3.39 10.2 15 12 3.39 13.8z",
};

/** A small inline SVG icon (no emoji font needed). */
export function icon(name, size = 16) {
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("width", String(size));
  svg.setAttribute("height", String(size));
  svg.setAttribute("aria-hidden", "true");
  svg.setAttribute("class", `icon icon-${name}`);
  const path = document.createElementNS(SVG, "path");
  path.setAttribute("d", ICONS[name]);
  path.setAttribute("fill", "currentColor");
  svg.append(path);
  return svg;
}
