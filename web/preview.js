// "Preview": an image, a PDF, plain text, audio or video shown in a dialog, without a download. The API
// (GET /me/previews/{key}) decides what may be previewed and answers a presigned URL of the file, served as
// its safe type; the page shows it where nothing of it can run: <img>, <object type="application/pdf">,
// text fetched and set as textContent, <audio>/<video> with controls. Loaded at the first "Preview".

import { api, keyPath } from "./api.js";
import { $, el } from "./page.js";
import { modal } from "./share.js";

// A text preview shows at most this much of the file.
const TEXT_LIMIT = 256 * 1024;

function previewDialog() {
  if ($("preview-dialog")) return $("preview-dialog");
  const dialog = modal(
    "preview-dialog",
    "",
    el("div", { id: "preview-body", className: "preview-body" }),
    el("p", { id: "preview-error", className: "error", role: "alert" }),
    el(
      "div",
      { className: "dialog-actions" },
      el("button", { type: "button", id: "preview-close", textContent: "Close", onclick: () => $("preview-dialog").close() }),
    ),
  );
  dialog.classList.add("preview");
  // Nothing keeps playing or loading once the dialog is closed.
  dialog.addEventListener("close", () => $("preview-body").replaceChildren());
  return dialog;
}

const VIEWS = {
  image: (url, name) => el("img", { src: url, alt: name }),
  pdf: (url, name) =>
    el("object", { data: url, type: "application/pdf", title: name }, el("p", { textContent: "This browser shows no PDF here: download the file to read it." })),
  audio: (url, name) => el("audio", { src: url, controls: true, ariaLabel: name }),
  video: (url, name) => el("video", { src: url, controls: true, ariaLabel: name }),
};

async function textView(url, name) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`storage answered ${response.status}`);
  const text = await response.text();
  const pre = el("pre", { tabIndex: 0, ariaLabel: name });
  pre.textContent = text.length > TEXT_LIMIT ? `${text.slice(0, TEXT_LIMIT)}\n…` : text;
  return pre;
}

export async function previewFile(key, name) {
  const dialog = previewDialog();
  modal("preview-dialog", name);
  $("preview-body").replaceChildren(el("p", { className: "status", textContent: "Loading the preview…" }));
  $("preview-error").textContent = "";
  dialog.showModal();
  $("preview-close").focus();
  try {
    const { url, kind } = await api(`/me/previews/${keyPath(key)}`);
    const view = kind === "text" ? await textView(url, name) : VIEWS[kind] && VIEWS[kind](url, name);
    if (!view) throw new Error(`no preview of this kind (${kind})`);
    if (dialog.open) $("preview-body").replaceChildren(view);
  } catch (error) {
    $("preview-body").replaceChildren();
    if (error.status === 401) return;
    if (error.status === 415) $("preview-error").textContent = "This file cannot be previewed: download it to open it.";
    else if (error.status === 413) $("preview-error").textContent = "This file is too large to preview: download it to open it.";
    else $("preview-error").textContent = `The preview could not be shown: ${error.message}`;
  }
}
