// The admin page: asks /api/admin/overview for one workspace and draws its sections; every
// change is a JSON POST the server checks (admins only, that workspace only) and records.
import { h, loadWords, postJson, request, t, tn } from "/static/dom.js";

const $ = (selector) => document.querySelector(selector);
const state = { platform: "", workspace: "", filters: {} };

function say(text, error = false) {
  const status = $("#status");
  status.textContent = text;
  status.classList.toggle("error", error);
}

function when(seconds) {
  return new Date(seconds * 1000).toISOString().replace("T", " ").slice(0, 16) + " UTC";
}

function age(seconds) {
  if (seconds < 120) return `${seconds} s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} min`;
  return `${Math.round(seconds / 3600)} h`;
}

function table(headings, rows) {
  if (!rows.length) return h("p", { class: "note" }, t("None."));
  return h(
    "table",
    {},
    h("thead", {}, h("tr", {}, headings.map((name) => h("th", {}, name)))),
    h("tbody", {}, rows.map((cells) => h("tr", {}, cells.map((cell) => h("td", {}, cell))))),
  );
}

function fill(id, ...children) {
  const body = $(`#${id} .body`);
  body.replaceChildren(...children);
}

function query(extra = {}) {
  const params = new URLSearchParams({ platform: state.platform, workspace: state.workspace });
  for (const [name, value] of Object.entries({ ...state.filters, ...extra })) {
    if (value) params.set(name, value);
  }
  return params.toString();
}

async function act(url, payload) {
  const answer = await postJson(url, payload);
  if (!answer.ok) {
    say(answer.body.error || t("Refused ({status}).", { status: answer.status }), true);
    return;
  }
  await load();
  say(answer.body.text);
}

function moderate(payload) {
  return act("/api/admin/moderation", { platform: state.platform, workspace: state.workspace, ...payload });
}

function draw(view) {
  const platforms = $("#platform");
  if (!platforms.options.length) {
    platforms.replaceChildren(...view.platforms.map((name) => h("option", { value: name }, name)));
    platforms.value = view.platform;
  }
  fill(
    "keys",
    table(
      [t("key"), t("state"), t("in flight"), t("tasks today"), t("credits today"), t("refusals seen"), t("limits")],
      view.keys.map((key) => [
        key.name,
        key.out_until ? t("{state} until {when}", { state: key.state, when: when(key.out_until) }) : key.state,
        key.active,
        key.tasks_today,
        key.credits_today,
        key.failures,
        t("weight {weight}, {concurrent} at once, {daily} a day", { weight: key.weight, concurrent: key.max_concurrent || "∞", daily: key.daily_tasks || "∞" }) + (key.modes.length ? ", " + key.modes.join("/") : ""),
      ]),
    ),
  );
  fill(
    "queue",
    table(
      [t("job"), t("state"), t("owner"), t("age"), t("requester"), t("prompt"), ""],
      view.queue.jobs.map((job) => [
        h("code", {}, job.id),
        job.status,
        job.owner ?? "—",
        age(job.age_seconds),
        job.requester_id,
        job.prompt,
        h("button", { type: "button", class: "danger", "data-job": job.id, onclick: () => act("/api/admin/cancel", { job_id: job.id }) }, t("Cancel")),
      ]),
    ),
    view.queue.direct_messages
      ? h("p", { class: "note", "data-direct-messages": "" }, tn(
        "{n} job in direct messages is not listed: only its requester may see or cancel it.",
        "{n} jobs in direct messages are not listed: only their requesters may see or cancel them.",
        view.queue.direct_messages,
      ))
      : "",
  );
  const moderation = view.moderation;
  fill(
    "moderation",
    h("h3", {}, t("Banned now")),
    table(
      [t("user"), t("until"), ""],
      moderation.bans.map((ban) => [
        h("code", {}, ban.user_id),
        when(ban.until),
        h("button", { type: "button", "data-unban": ban.user_id, onclick: () => moderate({ action: "unban", entry: ban.user_id }) }, t("Unban")),
      ]),
    ),
    h("h3", {}, t("This workspace's rules")),
    table(
      [t("category"), t("rule"), ""],
      moderation.rules.map((rule) => [
        rule.category,
        h(
          "span",
          {},
          h("code", {}, rule.entry + (rule.pattern ? t(" (pattern)") : "")),
          rule.inactive ? h("span", { class: "note", "data-inactive": "" }, " ", t("inactive: {reason}", { reason: rule.inactive })) : "",
        ),
        h("button", { type: "button", "data-remove": rule.entry, onclick: () => moderate({ action: "remove", entry: rule.entry }) }, t("Remove")),
      ]),
    ),
    h("p", { class: "note" }, tn("The configuration adds {n} rule everywhere.", "The configuration adds {n} rules everywhere.", moderation.global_rules)),
  );
  const limit = (value) => (value ? value : "∞");
  fill(
    "tiers",
    view.tiers.configured ? "" : h("p", { class: "note" }, t("No [[quotas.tiers]]: everyone has the default tier ([limits]).")),
    table(
      [t("tier"), t("credits a day"), t("chat tokens a day"), t("jobs at once"), t("modes, models"), t("users"), t("roles")],
      view.tiers.tiers.map((tier) => [
        tier.default ? t("{name} (everyone else)", { name: tier.name }) : tier.name,
        `${limit(tier.limits.daily_credits)} (${tier.limits.refill})`,
        limit(tier.limits.daily_chat_tokens),
        limit(tier.limits.concurrent_jobs),
        [...tier.limits.modes, ...tier.limits.models].join(", ") || t("all"),
        tier.users.join(", ") || "—",
        tier.roles.join(", ") || "—",
      ]),
    ),
  );
  const audit = view.audit;
  fill(
    "audit",
    table(
      [t("when"), t("kind"), t("by"), t("about"), t("where"), t("before → after")],
      audit.entries.map(({ entry }) => [
        entry.at.replace("T", " ").replace("Z", " UTC"),
        entry.kind,
        h("code", {}, entry.actor_id),
        h("code", {}, entry.target),
        entry.channel_id || "—",
        h("code", {}, `${JSON.stringify(entry.before)} → ${JSON.stringify(entry.after)}`),
      ]),
    ),
    h(
      "p",
      { class: "inline" },
      audit.page > 1 ? h("button", { type: "button", onclick: () => page(audit.page - 1) }, t("Newer")) : "",
      t("Page {page}", { page: audit.page }),
      audit.more ? h("button", { type: "button", onclick: () => page(audit.page + 1) }, t("Older")) : "",
    ),
  );
  $("#export").href = `/api/admin/audit.jsonl?${query()}`;
  const cluster = view.cluster;
  fill(
    "cluster",
    h("p", { class: "note" }, t("Schema version {version}.", { version: cluster.schema_version })),
    table(
      [t("process"), t("platforms"), t("shards"), t("leases"), t("seen"), t("state")],
      cluster.processes.map((process) => [
        h("code", {}, process.id),
        process.platforms.join(", ") || "—",
        process.shards ?? "—",
        process.leases,
        when(process.seen_at),
        process.live ? t("live") : t("gone"),
      ]),
    ),
    h("h3", {}, t("Unfinished jobs by state and owner")),
    table(
      [t("state"), t("owner"), t("jobs")],
      cluster.jobs.map((row) => [row.status, row.owner ?? t("(no owner)"), row.count]),
    ),
  );
  $("#sections").hidden = false;
}

async function page(number) {
  state.filters.page = String(number);
  await load();
}

async function load() {
  const answer = await request(`/api/admin/overview?${query()}`);
  if (!answer.ok) {
    $("#sections").hidden = true;
    say(answer.body.error || t("Refused ({status}).", { status: answer.status }), true);
    return false;
  }
  say("");
  draw(answer.body);
  return true;
}

function formValues(form) {
  return Object.fromEntries(new FormData(form).entries());
}

$("#where").addEventListener("submit", async (event) => {
  event.preventDefault();
  state.platform = $("#platform").value || state.platform;
  state.workspace = $("#workspace").value.trim();
  state.filters = {};
  const params = new URLSearchParams({ platform: state.platform, workspace: state.workspace });
  history.replaceState(null, "", `/admin?${params}`);
  await load();
});

$("#ban-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const values = formValues(event.target);
  await moderate({ action: "ban", entry: values.entry.trim(), minutes: values.minutes || "" });
});

$("#rule-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const values = formValues(event.target);
  await moderate({ action: "add", entry: values.entry.trim(), category: values.category.trim(), pattern: values.pattern === "on" });
});

$("#audit-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const values = formValues(event.target);
  state.filters = { user: values.user.trim(), kind: values.kind.trim(), days: values.days };
  await load();
});

async function start() {
  await loadWords();
  const params = new URLSearchParams(location.search);
  state.platform = params.get("platform") || "";
  state.workspace = params.get("workspace") || "";
  $("#workspace").value = state.workspace;
  const probe = await request(`/api/admin/overview?${query()}`);
  if (probe.status === 403 || probe.status === 401 || probe.status === 404) {
    say(probe.body.error, true);
    return;
  }
  if (!probe.ok) {
    say(probe.body.error, true);
    return;
  }
  if (!state.workspace) {
    say(t("Choose a platform and a workspace (its id), then Open."));
    const names = probe.body.platforms || [];
    $("#platform").replaceChildren(...names.map((name) => h("option", { value: name }, name)));
    return;
  }
  draw(probe.body);
}

start();
