// The command palette: appears when the input starts with "/", filters as you type, and is
// driven with the arrow keys and Enter/Tab. Once a command is typed, a hint lists its options.

import { h, t } from "./dom.js";

function choiceText(option) {
  if (!option.choices.length) return option.type;
  const shown = option.choices.slice(0, 4).join("|");
  return option.choices.length > 4 ? `${shown}|…` : shown;
}

/** Chips for a command's options: flags only in the palette, flags and values in the hint. */
function optionChips(command, detailed) {
  const chips = [];
  for (const option of command.options) {
    if (option.type === "attachment") continue;
    const title = option.description;
    if (option.name === command.free_text) {
      chips.push(h("span", { class: "chip free" + (option.required ? " required" : ""), title }, option.name));
      continue;
    }
    const flag = option.flags[0] || `--${option.name}`;
    const label = detailed && option.type !== "boolean" ? `${flag} ${choiceText(option)}` : flag;
    chips.push(h("span", { class: "chip", title }, label));
    if (!detailed) continue;
    for (const bare of option.flag_values) {
      if (bare !== flag) chips.push(h("span", { class: "chip bare", title }, bare));
    }
  }
  if (command.uploads.length) {
    const names = command.uploads.length > 2
      ? `${command.uploads[0]}…${command.uploads[command.uploads.length - 1]}`
      : command.uploads.join(", ");
    chips.push(h("span", { class: "chip upload", title: t("Attach images with +, drag and drop or paste") }, t("image: {names}", { names })));
  }
  return chips;
}

export class Palette {
  /** ``loadSaved()`` resolves to the names of the user's saved options where they type. */
  constructor(listElement, hintElement, input, onChoose, loadSaved = async () => []) {
    this.list = listElement;
    this.hint = hintElement;
    this.input = input;
    this.onChoose = onChoose;
    this.loadSaved = loadSaved;
    this.saved = [];
    this.savedStale = true;
    this.commands = [];
    this.matches = [];
    this.selected = 0;
    this.list.addEventListener("mousedown", (event) => {
      const item = event.target.closest(".palette-item");
      if (!item) return;
      event.preventDefault();
      this.choose(Number(item.dataset.index));
    });
  }

  setCommands(commands) {
    this.commands = commands;
    this.update();
  }

  get open() {
    return !this.list.hidden;
  }

  /** The command the text names (``/diffusion txt2img a fox`` → diffusion.txt2img), if any. */
  commandOf(text) {
    const normalized = text.trimStart().toLowerCase();
    let best = null;
    for (const command of this.commands) {
      const usage = command.usage;
      if (normalized === usage || normalized.startsWith(usage + " ") || normalized.startsWith(usage + "\n")) {
        if (!best || usage.length > best.usage.length) best = command;
      }
    }
    return best;
  }

  update() {
    const text = this.input.value.slice(0, this.input.selectionStart ?? this.input.value.length);
    const typing = /^\/(\S*)$/.exec(text) || /^\/(diffusion\s+\S*)$/i.exec(text);
    if (!typing || !this.commands.length) {
      this.close();
    } else {
      const query = typing[1].toLowerCase().replace(/\s+/g, " ");
      const scored = [];
      for (const command of this.commands) {
        const name = command.usage.slice(1);
        const at = name.indexOf(query);
        if (at >= 0) scored.push([at === 0 ? 0 : 1, command]);
      }
      scored.sort((a, b) => a[0] - b[0]);
      this.matches = scored.map((entry) => entry[1]);
      this.selected = Math.min(this.selected, Math.max(0, this.matches.length - 1));
      this.render();
    }
    this.renderHint();
  }

  render() {
    this.list.replaceChildren();
    if (!this.matches.length) {
      this.list.append(h("div", { class: "palette-empty" }, t("No command matches — type /help for the list")));
    }
    this.matches.forEach((command, index) => {
      const item = h(
        "div",
        {
          class: "palette-item" + (index === this.selected ? " selected" : ""),
          role: "option",
          "aria-selected": String(index === this.selected),
          "data-index": String(index),
        },
        h("div", { class: "palette-line" },
          h("span", { class: "palette-usage" }, command.usage),
          h("span", { class: "palette-description" }, command.description)),
        h("div", { class: "palette-options" }, ...optionChips(command, false)),
      );
      this.list.append(item);
    });
    this.list.prepend(h("div", { class: "palette-title" }, t("Commands")));
    this.list.hidden = false;
    this.list.querySelector(".selected")?.scrollIntoView({ block: "nearest" });
  }

  renderHint() {
    const command = this.open ? null : this.commandOf(this.input.value);
    if (!command) {
      this.savedStale = true;
      this.hint.hidden = true;
      return;
    }
    const example = command.examples[0];
    if (command.expands && this.savedStale) {
      this.savedStale = false;
      this.loadSaved().then((names) => {
        this.saved = names;
        this.renderHint();
      });
    }
    const saved = command.expands
      ? this.saved.map((name) => h("span", { class: "chip saved", title: t("Your saved option (/prefer option list)") }, `--${name}`))
      : [];
    this.hint.replaceChildren(
      h("span", { class: "hint-usage" }, command.usage),
      h("span", { class: "hint-description" }, command.description),
      ...optionChips(command, true),
      ...saved,
      example ? h("div", { class: "hint-example" }, t("e.g. "), h("code", {}, example)) : "",
    );
    this.hint.hidden = false;
  }

  close() {
    this.list.hidden = true;
    this.matches = [];
    this.selected = 0;
  }

  /** Put the command ``index`` in the input; Enter on a command typed in full (needing no more
   * text) sends it at once. */
  choose(index, enter = false) {
    const command = this.matches[index];
    if (!command) return;
    const rest = this.input.value.slice(this.input.selectionStart ?? this.input.value.length);
    const exact = this.input.value.trim().toLowerCase() === command.usage;
    const takesNothing = !command.options.length;
    const complete = !command.options.some((o) => o.required && o.type !== "attachment");
    this.input.value = command.usage + (takesNothing ? "" : " ") + rest.trimStart();
    const end = command.usage.length + (takesNothing ? 0 : 1);
    this.input.setSelectionRange(end, end);
    this.close();
    this.renderHint();
    this.onChoose(command, enter && exact && complete);
  }

  /** Handle a key in the input; returns true when the palette used it. */
  handleKey(event) {
    if (!this.open) return false;
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      const step = event.key === "ArrowDown" ? 1 : -1;
      const count = Math.max(1, this.matches.length);
      this.selected = (this.selected + step + count) % count;
      this.render();
      return true;
    }
    if ((event.key === "Enter" && !event.shiftKey) || event.key === "Tab") {
      if (!this.matches.length) return event.key === "Tab";
      this.choose(this.selected, event.key === "Enter");
      return true;
    }
    if (event.key === "Escape") {
      this.close();
      this.renderHint();
      return true;
    }
    return false;
  }
}
