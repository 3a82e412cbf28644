// Forms genbot opens (a dialog of fields): shown, refused values marked beside their fields,
// submitted to /api/modal. Used by the playground and the gallery.

import { h, postJson, t } from "./dom.js";
import { RegionEditor } from "./region.js";

function modalInput(field) {
  const attributes = { id: `field-${field.id}`, name: field.id, required: field.required };
  if (field.kind === "select") {
    const select = h("select", attributes,
      h("option", { value: "" }, field.placeholder || "—"),
      ...field.choices.map((choice) => h("option", { value: choice.value }, choice.label)));
    select.value = field.default;
    return { input: select, extra: null };
  }
  const text = { ...attributes, placeholder: field.placeholder, maxlength: field.max_length };
  const input = field.multiline ? h("textarea", { ...text, rows: 4 }) : h("input", { ...text, type: "text" });
  input.value = field.default;
  if (field.kind !== "region" || !field.image_url) return { input, extra: null };
  const editor = new RegionEditor(field.image_url, (value) => (input.value = value));
  return { input, extra: editor.element };
}

/** Show ``errors`` (field id → sentence) beside their fields; focus the first one. */
export function showFieldErrors(form, errors) {
  let first = null;
  for (const field of form.querySelectorAll(".field")) {
    const id = field.dataset.field;
    const text = errors[id] || "";
    const slot = field.querySelector(".field-error");
    slot.textContent = text;
    slot.hidden = !text;
    field.classList.toggle("invalid", Boolean(text));
    const input = form.elements[id];
    if (input) input.toggleAttribute("aria-invalid", Boolean(text));
    if (text && !first) first = input;
  }
  first?.focus();
}

/** Show the form ``modal`` in ``dialog`` and submit it to /api/modal; ``onSent()`` once genbot
 * took it (the dialog then closes). */
export function openModal(dialog, modal, onSent = () => {}) {
  const error = h("div", { class: "modal-error", role: "alert", hidden: true });
  const notice = modal.notice ? h("div", { class: "modal-notice", role: "alert" }, modal.notice) : "";
  const inputs = modal.fields.map((field) => {
    const { input, extra } = modalInput(field);
    const problem = h("div", { class: "field-error", id: `error-${field.id}`, role: "alert", hidden: true });
    input.setAttribute("aria-describedby", problem.id);
    return h("div", { class: "field", "data-field": field.id },
      h("label", { class: "field-label", for: input.id }, field.label, field.required ? h("span", { class: "required" }, " *") : ""),
      extra, input, problem);
  });
  const submit = h("button", { type: "submit", class: "btn btn-primary" }, t("Submit"));
  const form = h(
    "form",
    { class: "modal-form", novalidate: true },
    h("h2", {}, modal.title),
    notice,
    ...inputs,
    error,
    h("div", { class: "modal-actions" },
      h("button", { type: "button", class: "btn btn-link", onclick: () => dialog.close() }, t("Cancel")), submit),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    submit.disabled = true;
    error.hidden = true;
    const values = Object.fromEntries(modal.fields.map((f) => [f.id, form.elements[f.id].value]));
    const result = await postJson("/api/modal", { custom_id: modal.custom_id, values });
    submit.disabled = false;
    if (dialog.firstElementChild !== form) return;
    if (result.ok) {
      dialog.close();
      onSent();
    } else if (result.body.errors) {
      showFieldErrors(form, result.body.errors);
    } else {
      error.textContent = result.body.error || t("The form could not be sent.");
      error.hidden = false;
    }
  });
  if (dialog.open) dialog.close();
  dialog.replaceChildren(form);
  dialog.showModal();
  const errors = modal.errors || {};
  if (Object.keys(errors).length) showFieldErrors(form, errors);
  else form.querySelector("input, textarea, select")?.focus();
}
