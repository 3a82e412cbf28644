// Vary (Region) editor: draw rectangles or freehand outlines on the image, undo, clear. The
// shapes become the form's region text (percent of the image): "x,y,w,h" for a rectangle,
// "polygon x1 y1 x2 y2 …" for an outline, joined by "; " — genbot turns that into the mask.

import { h, t } from "./dom.js";

const MIN_SIDE = 0.01;
const MIN_STEP = 0.006;
const MAX_POINTS = 400;

const percent = (value) => Math.round(Math.min(Math.max(value, 0), 1) * 1000) / 10;

/** The region text of ``shapes`` (normalised 0–1 coordinates). */
export function regionText(shapes) {
  return shapes
    .map((shape) => {
      if (shape.type === "rect") {
        const x = percent(shape.x), y = percent(shape.y);
        const w = Math.min(percent(shape.w), 100 - x), hgt = Math.min(percent(shape.h), 100 - y);
        return w > 0 && hgt > 0 ? `${x},${y},${w},${hgt}` : "";
      }
      const step = Math.ceil(shape.points.length / MAX_POINTS);
      const kept = shape.points.filter((_, index) => index % step === 0);
      return "polygon " + kept.map(([x, y]) => `${percent(x)} ${percent(y)}`).join(" ");
    })
    .filter(Boolean)
    .join("; ");
}

export class RegionEditor {
  /** @param imageUrl the image to draw on; @param onChange(text) after every change. */
  constructor(imageUrl, onChange) {
    this.shapes = [];
    this.tool = "rect";
    this.drawing = null;
    this.onChange = onChange;
    this.image = h("img", { src: imageUrl, alt: t("The image to change"), draggable: "false" });
    this.canvas = h("canvas", { class: "region-canvas", "aria-label": t("Draw the area to change") });
    this.tools = {
      rect: this.toolButton("rect", t("▭ Rectangle")),
      lasso: this.toolButton("lasso", t("✎ Lasso")),
    };
    this.undoButton = h("button", { type: "button", class: "btn btn-secondary", disabled: true, onclick: () => this.undo() }, t("↶ Undo"));
    this.clearButton = h("button", { type: "button", class: "btn btn-secondary", disabled: true, onclick: () => this.clear() }, t("Clear"));
    this.element = h(
      "div",
      { class: "region-editor" },
      h("div", { class: "region-tools", role: "toolbar" }, this.tools.rect, this.tools.lasso, this.undoButton, this.clearButton),
      h("div", { class: "region-stage" }, this.image, this.canvas),
    );
    this.image.addEventListener("load", () => this.resize());
    new ResizeObserver(() => this.resize()).observe(this.image);
    this.canvas.addEventListener("pointerdown", (event) => this.start(event));
    this.canvas.addEventListener("pointermove", (event) => this.move(event));
    this.canvas.addEventListener("pointerup", (event) => this.finish(event));
    this.canvas.addEventListener("pointercancel", () => this.cancel());
    this.select("rect");
  }

  toolButton(tool, label) {
    return h("button", { type: "button", class: "btn btn-secondary", "data-tool": tool, onclick: () => this.select(tool) }, label);
  }

  select(tool) {
    this.tool = tool;
    for (const [name, button] of Object.entries(this.tools)) {
      button.classList.toggle("btn-primary", name === tool);
      button.classList.toggle("btn-secondary", name !== tool);
      button.setAttribute("aria-pressed", String(name === tool));
    }
  }

  resize() {
    const ratio = window.devicePixelRatio || 1;
    this.canvas.width = Math.max(1, Math.round(this.image.clientWidth * ratio));
    this.canvas.height = Math.max(1, Math.round(this.image.clientHeight * ratio));
    this.canvas.style.width = `${this.image.clientWidth}px`;
    this.canvas.style.height = `${this.image.clientHeight}px`;
    this.draw();
  }

  point(event) {
    const box = this.canvas.getBoundingClientRect();
    const x = (event.clientX - box.left) / Math.max(box.width, 1);
    const y = (event.clientY - box.top) / Math.max(box.height, 1);
    return [Math.min(Math.max(x, 0), 1), Math.min(Math.max(y, 0), 1)];
  }

  start(event) {
    event.preventDefault();
    this.canvas.setPointerCapture?.(event.pointerId);
    const [x, y] = this.point(event);
    this.drawing = this.tool === "rect" ? { type: "rect", x0: x, y0: y, x1: x, y1: y } : { type: "poly", points: [[x, y]] };
    this.draw();
  }

  move(event) {
    if (!this.drawing) return;
    const [x, y] = this.point(event);
    if (this.drawing.type === "rect") {
      Object.assign(this.drawing, { x1: x, y1: y });
    } else {
      const [lx, ly] = this.drawing.points[this.drawing.points.length - 1];
      if (Math.hypot(x - lx, y - ly) >= MIN_STEP) this.drawing.points.push([x, y]);
    }
    this.draw();
  }

  finish(event) {
    if (!this.drawing) return;
    this.move(event);
    const shape = this.drawing;
    this.drawing = null;
    if (shape.type === "rect") {
      const rect = { type: "rect", x: Math.min(shape.x0, shape.x1), y: Math.min(shape.y0, shape.y1), w: Math.abs(shape.x1 - shape.x0), h: Math.abs(shape.y1 - shape.y0) };
      if (rect.w >= MIN_SIDE && rect.h >= MIN_SIDE) this.shapes.push(rect);
    } else if (shape.points.length >= 3) {
      this.shapes.push(shape);
    }
    this.changed();
  }

  cancel() {
    this.drawing = null;
    this.draw();
  }

  undo() {
    this.shapes.pop();
    this.changed();
  }

  clear() {
    this.shapes = [];
    this.changed();
  }

  changed() {
    this.undoButton.disabled = this.shapes.length === 0;
    this.clearButton.disabled = this.shapes.length === 0;
    this.draw();
    this.onChange(regionText(this.shapes));
  }

  draw() {
    const context = this.canvas.getContext("2d");
    const { width, height } = this.canvas;
    context.clearRect(0, 0, width, height);
    const shapes = this.drawing ? [...this.shapes, this.pending()] : this.shapes;
    context.fillStyle = "rgba(88, 101, 242, 0.45)";
    context.strokeStyle = "#ffffff";
    context.lineWidth = Math.max(1, width / 300);
    for (const shape of shapes) {
      context.beginPath();
      if (shape.type === "rect") {
        context.rect(shape.x * width, shape.y * height, shape.w * width, shape.h * height);
      } else {
        shape.points.forEach(([x, y], index) => (index ? context.lineTo(x * width, y * height) : context.moveTo(x * width, y * height)));
        context.closePath();
      }
      context.fill();
      context.stroke();
    }
  }

  pending() {
    const shape = this.drawing;
    if (shape.type !== "rect") return shape;
    return { type: "rect", x: Math.min(shape.x0, shape.x1), y: Math.min(shape.y0, shape.y1), w: Math.abs(shape.x1 - shape.x0), h: Math.abs(shape.y1 - shape.y0) };
  }
}
