// The gallery: the user's results as a grid, found by the search of /jobs (text, type, channel,
// date; admins: everyone's), and a viewer with Download and the forms a result offers ("Use as
// init": genbot's img2img form; the job starts in the channel the gallery was opened from, and
// the page goes there).
// Thumbnails load lazily (loading="lazy"); the next page loads when the end of the grid comes
// into view (an IntersectionObserver), or with "Load more".

import { formatTime, h, loadWords, postJson, request, t, tn } from "./dom.js";
import { openModal } from "./forms.js";

const $ = (selector) => document.querySelector(selector);
const CHANNEL_PATTERN = /^[a-z0-9][a-z0-9_-]{0,31}$/;
const FILTERS = ["text", "type", "channel", "date", "scope"];
const state = { from: "general", query: new URLSearchParams(), after: null, loading: null, results: [], open: -1, generation: 0, endInView: false };

function readLocation() {
  const params = new URLSearchParams(location.search);
  const from = params.get("from") || "";
  state.from = CHANNEL_PATTERN.test(from) ? from : "general";
  const form = $("#filters");
  for (const name of FILTERS) form.elements[name].value = params.get(name) || (name === "scope" ? "me" : "");
  $("#back").href = `/#${state.from}`;
}

function formQuery() {
  const form = $("#filters");
  const query = new URLSearchParams({ from: state.from });
  for (const name of FILTERS) {
    const value = form.elements[name].value.trim();
    if (value && !(name === "scope" && value === "me")) query.set(name, value);
  }
  return query;
}

function showError(text) {
  const error = $("#gallery-error");
  error.textContent = text || "";
  error.hidden = !text;
}

async function search() {
  state.query = formQuery();
  history.replaceState(null, "", `/gallery?${state.query}`);
  state.after = null;
  state.results = [];
  state.generation += 1;
  $("#grid").replaceChildren();
  $("#heading").textContent = t("Loading…");
  await loadPage();
}

async function loadPage() {
  const generation = state.generation;
  if (state.loading === generation) return;
  state.loading = generation;
  const query = new URLSearchParams(state.query);
  if (state.after) query.set("after", state.after);
  const result = await request(`/api/gallery?${query}`);
  if (generation !== state.generation) return;
  state.loading = null;
  if (!result.ok) {
    showError(result.body.error || t("The gallery could not be loaded."));
    $("#heading").textContent = "";
    $("#load-more").hidden = true;
    return;
  }
  showError("");
  for (const item of result.body.results) addTile(item);
  state.after = result.body.after;
  $("#load-more").hidden = !state.after;
  const count = state.results.length;
  $("#heading").textContent = count ? result.body.heading : t("{heading}: no results.", { heading: result.body.heading });
  if (state.after && state.endInView) loadPage();
}

function addTile(item) {
  const index = state.results.push(item) - 1;
  const image = h("img", { src: item.thumbnail, alt: item.prompt, loading: "lazy", decoding: "async", width: 256, height: 256 });
  $("#grid").append(h("figure", { class: "tile", "data-job": item.id },
    h("button", { type: "button", class: "tile-open", title: item.prompt, onclick: () => openViewer(index) }, image),
    h("figcaption", {}, h("span", { class: "tile-title" }, item.title), " ", h("span", { class: "tile-prompt" }, item.prompt))));
}

function where(item) {
  return item.channel ? `#${item.channel}` : t("a DM with genbot");
}

function openViewer(index) {
  const item = state.results[index];
  if (!item) return;
  state.open = index;
  const image = $("#viewer-image");
  image.src = item.image;
  image.alt = item.prompt;
  $("#viewer-title").textContent = item.title;
  $("#viewer-prompt").textContent = item.prompt;
  const facts = t("{type} · {time} · {where} · job {id}", { type: item.type, time: formatTime(item.created), where: where(item), id: item.id });
  const more = item.images > 1 ? ` · ${tn("the first of {n} image", "the first of {n} images", item.images)}` : "";
  $("#viewer-facts").textContent = facts + more;
  $("#viewer-download").href = item.download;
  $("#viewer-forms").replaceChildren(...item.forms.map((form) => h("button", {
    type: "button", class: "btn btn-primary", "data-action": form.action,
    onclick: (event) => openForm(item, form.action, event.currentTarget),
  }, form.label)));
  $("#viewer-prev").disabled = index === 0;
  $("#viewer-next").disabled = index === state.results.length - 1;
  $("#viewer").hidden = false;
  $("#viewer-close").focus();
}

function closeViewer() {
  $("#viewer").hidden = true;
  $("#viewer-image").removeAttribute("src");
  const tile = document.querySelector(`.tile[data-job="${CSS.escape(state.results[state.open]?.id || "")}"] .tile-open`);
  state.open = -1;
  tile?.focus();
}

async function openForm(item, action, button) {
  button.disabled = true;
  const result = await postJson("/api/gallery/form", { job_id: item.id, action, from: state.from });
  button.disabled = false;
  if (!result.ok) {
    $("#viewer-facts").textContent = result.body.error || t("That form cannot be opened.");
    return;
  }
  closeViewer();
  openModal($("#modal"), result.body.modal, () => { location.href = `/#${result.body.channel}`; });
}

async function setUp() {
  await loadWords();
  readLocation();
  $("#filters").addEventListener("submit", (event) => {
    event.preventDefault();
    search();
  });
  $("#load-more").addEventListener("click", () => loadPage());
  $("#viewer-close").addEventListener("click", closeViewer);
  $("#viewer-prev").addEventListener("click", () => openViewer(state.open - 1));
  $("#viewer-next").addEventListener("click", () => openViewer(state.open + 1));
  $("#viewer").addEventListener("click", (event) => { if (event.target.id === "viewer") closeViewer(); });
  document.addEventListener("keydown", (event) => {
    if ($("#viewer").hidden || $("#modal").open) return;
    if (event.key === "Escape") closeViewer();
    else if (event.key === "ArrowLeft" && state.open > 0) openViewer(state.open - 1);
    else if (event.key === "ArrowRight") openViewer(state.open + 1);
  });
  new IntersectionObserver((entries) => {
    state.endInView = entries.some((entry) => entry.isIntersecting);
    if (state.endInView && state.after) loadPage();
  }, { rootMargin: "400px" }).observe($("#more"));
  search();
}

setUp();
