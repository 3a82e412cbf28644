// The message box: text or slash commands, the command palette, and images attached with the
// + button, drag and drop or paste. Images and documents upload at once and go with the next send.

import { formatSize, h, icon, postJson, request, t } from "./dom.js";
import { Palette } from "./palette.js";

const NARROW_BOX_PIXELS = 420;

export class Composer {
  /**
   * @param container element to build the composer in
   * @param options {placeholder(), target() → {channel, thread}, limits() → {max_upload_bytes, max_document_bytes}}
   */
  constructor(container, options) {
    this.options = options;
    this.uploads = [];
    this.lastSent = "";
    this.sending = false;
    this.error = h("div", { class: "composer-error", role: "alert", hidden: true });
    this.tray = h("div", { class: "tray", hidden: true });
    this.fileInput = h("input", {
      type: "file",
      accept: "image/png,image/jpeg,image/gif,image/webp,application/pdf,text/*,.md,.csv,.json,.py,.js,.ts,.java,.go,.rs,.c,.cpp,.rb,.sh,.sql,.yaml,.yml,.toml",
      multiple: true,
      hidden: true,
      onchange: () => {
        this.addFiles([...this.fileInput.files]);
        this.fileInput.value = "";
      },
    });
    this.input = h("textarea", {
      rows: 1,
      class: "input",
      "aria-label": t("Message or command"),
      oninput: () => this.onInput(),
      onkeydown: (event) => this.onKey(event),
      onpaste: (event) => this.onPaste(event),
      onclick: () => this.palette.update(),
    });
    const uploadButton = h(
      "button",
      { type: "button", class: "upload-button", title: t("Attach images or documents"), "aria-label": t("Attach images or documents"), onclick: () => this.fileInput.click() },
      "+",
    );
    const sendButton = h(
      "button",
      { type: "button", class: "send-button", title: t("Send (Enter)"), "aria-label": t("Send"), onclick: () => this.send() },
      icon("send", 20),
    );
    const paletteList = h("div", { class: "palette", role: "listbox", hidden: true });
    const hint = h("div", { class: "hint", hidden: true });
    this.palette = new Palette(
      paletteList,
      hint,
      this.input,
      (command, sendNow) => {
        if (sendNow) this.send();
      },
      async () => {
        const { channel } = this.options.target();
        const result = await request(`/api/saved-options?channel=${encodeURIComponent(channel)}`);
        return result.ok ? result.body.names : [];
      },
    );
    this.root = h(
      "div",
      { class: "composer" },
      paletteList,
      hint,
      this.error,
      h("div", { class: "composer-box" }, this.tray, h("div", { class: "composer-row" }, uploadButton, this.input, sendButton)),
      this.fileInput,
    );
    container.append(this.root);
    this.refreshPlaceholder();
    new ResizeObserver(() => this.refreshPlaceholder()).observe(this.input);
  }

  setCommands(commands) {
    this.palette.setCommands(commands);
  }

  /** The placeholder, its hint after " — " left out where the box is too narrow for it. */
  refreshPlaceholder() {
    const full = this.options.placeholder();
    const narrow = this.input.clientWidth > 0 && this.input.clientWidth < NARROW_BOX_PIXELS;
    this.input.placeholder = narrow ? full.split(" — ")[0] : full;
  }

  focus() {
    this.input.focus();
  }

  showError(message) {
    this.error.textContent = message;
    this.error.hidden = !message;
  }

  onInput() {
    this.input.style.height = "auto";
    this.input.style.height = `${Math.min(this.input.scrollHeight, 240)}px`;
    this.palette.update();
  }

  onKey(event) {
    if (event.isComposing) return;
    if (this.palette.handleKey(event)) {
      event.preventDefault();
      return;
    }
    if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      this.send();
    } else if (event.key === "ArrowUp" && !this.input.value && this.lastSent) {
      event.preventDefault();
      this.input.value = this.lastSent;
      this.onInput();
    } else if (event.key === "Escape") {
      this.showError("");
    }
  }

  onPaste(event) {
    const files = [...(event.clipboardData?.files || [])].filter((f) => f.type.startsWith("image/"));
    if (files.length) {
      event.preventDefault();
      this.addFiles(files);
    }
  }

  async addFiles(files) {
    this.showError("");
    const limits = this.options.limits();
    await Promise.all(files.map(async (file) => {
      const image = file.type.startsWith("image/");
      if (image && file.size > limits.max_upload_bytes) {
        this.showError(t("{file} is too large: images can be at most {size}.", { file: file.name, size: formatSize(limits.max_upload_bytes) }));
        return;
      }
      const documents = limits.max_document_bytes ?? limits.max_upload_bytes;
      if (!image && file.size > documents) {
        this.showError(t("{file} is too large: documents can be at most {size}.", { file: file.name, size: formatSize(documents) }));
        return;
      }
      const entry = { id: null, name: file.name, size: file.size, image, preview: image ? URL.createObjectURL(file) : "", uploading: true };
      this.uploads.push(entry);
      this.renderTray();
      const form = new FormData();
      form.append("file", file, file.name);
      const result = await request("/api/upload", { method: "POST", body: form });
      entry.uploading = false;
      if (result.ok) {
        entry.id = result.body.uploads[0].id;
      } else {
        this.remove(entry);
        this.showError(result.body.error);
      }
      this.renderTray();
    }));
  }

  remove(entry) {
    if (entry.preview) URL.revokeObjectURL(entry.preview);
    this.uploads = this.uploads.filter((u) => u !== entry);
    this.renderTray();
  }

  renderTray() {
    this.tray.replaceChildren(
      ...this.uploads.map((entry, index) =>
        h(
          "div",
          { class: "tray-item" + (entry.uploading ? " uploading" : ""), title: `${entry.name} · ${formatSize(entry.size)}` },
          entry.image ? h("img", { src: entry.preview, alt: entry.name }) : h("span", { class: "tray-file" }, "📄"),
          h("span", { class: "tray-index" }, String(index + 1)),
          h("span", { class: "tray-name" }, entry.name),
          h("button", { type: "button", class: "tray-remove", title: t("Remove"), "aria-label": t("Remove {name}", { name: entry.name }), onclick: () => this.remove(entry) }, "×"),
        ),
      ),
    );
    this.tray.hidden = !this.uploads.length;
  }

  async send() {
    if (this.sending) return;
    const text = this.input.value.trim();
    if (this.uploads.some((u) => u.uploading)) {
      this.showError(t("Wait a moment: the files are still uploading."));
      return;
    }
    const attachments = this.uploads.map((u) => u.id);
    if (!text && !attachments.length) return;
    const { channel, thread } = this.options.target();
    const endpoint = text.startsWith("/") ? "/api/command" : "/api/message";
    this.sending = true;
    const result = await postJson(endpoint, { text, channel, thread, attachments });
    this.sending = false;
    if (!result.ok) {
      this.showError(result.body.error || t("The message could not be sent."));
      return;
    }
    this.lastSent = text;
    this.palette.savedStale = true;
    this.input.value = "";
    this.uploads.forEach((u) => u.preview && URL.revokeObjectURL(u.preview));
    this.uploads = [];
    this.renderTray();
    this.showError("");
    this.onInput();
  }
}
