// "Copy link": a download link of one file that works without signing in, for a time chosen from the
// deployment's choices (config.json's linkExpiries, none above its cap). The link is copied to the
// clipboard and shown as text with its expiry too, since a browser may refuse the clipboard.
// Loaded at the first "Copy link", never with the page.

import { api, keyPath } from "./api.js";
import { $, config, el } from "./page.js";

// Seconds in words: "5 minutes", "1 hour", "90 seconds".
export function duration(seconds) {
  const [count, unit] = seconds % 3600 === 0 ? [seconds / 3600, "hour"] : seconds % 60 === 0 ? [seconds / 60, "minute"] : [seconds, "second"];
  return `${count} ${unit}${count === 1 ? "" : "s"}`;
}

// A modal dialog of the page's: labelled by its heading, Escape closes it, focus back where it was.
export function modal(id, title, ...children) {
  let dialog = $(id);
  if (!dialog) {
    dialog = el("dialog", { id }, el("h2", { id: `${id}-title`, tabIndex: -1 }), ...children);
    dialog.setAttribute("aria-labelledby", `${id}-title`);
    document.body.append(dialog);
  }
  $(`${id}-title`).textContent = title;
  const opener = document.activeElement;
  dialog.onclose = () => opener && opener.isConnected && opener.focus();
  return dialog;
}

function shareDialog() {
  if ($("share-dialog")) return $("share-dialog");
  const expiry = el("select", { id: "share-expiry" });
  const form = el(
    "form",
    { id: "share-form", noValidate: true },
    el("label", { htmlFor: "share-expiry", textContent: "The link works for" }),
    expiry,
    el("p", { className: "status", textContent: "Anyone who has the link can download the file until then." }),
    el(
      "div",
      { className: "dialog-actions" },
      el("button", { type: "submit", id: "share-copy", textContent: "Copy link" }),
      el("button", { type: "button", id: "share-close", textContent: "Close", onclick: () => $("share-dialog").close() }),
    ),
    el("p", { id: "share-error", className: "error", role: "alert" }),
    el(
      "div",
      { id: "share-result", hidden: true },
      el("label", { htmlFor: "share-url", textContent: "Link" }),
      el("input", { id: "share-url", readOnly: true, onfocus: (event) => event.target.select() }),
      el("p", { id: "share-expires", role: "status" }),
    ),
  );
  return modal("share-dialog", "", form);
}

export function shareFile(key, name) {
  const dialog = shareDialog();
  modal("share-dialog", `Copy a link to ${name}`);
  const choices = (config.linkExpiries || []).filter((seconds) => Number.isInteger(seconds) && seconds > 0);
  $("share-expiry").replaceChildren(...choices.map((seconds) => el("option", { value: seconds, textContent: duration(seconds) })));
  $("share-expiry").value = String(choices.includes(3600) ? 3600 : choices[0]);
  $("share-result").hidden = true;
  $("share-error").textContent = choices.length ? "" : "This deployment offers no share links.";
  $("share-copy").disabled = !choices.length;
  $("share-form").onsubmit = (event) => {
    event.preventDefault();
    copyLink(key);
  };
  dialog.showModal();
  $("share-expiry").focus();
}

async function copyLink(key) {
  $("share-error").textContent = "";
  $("share-copy").disabled = true;
  try {
    const { url, expiresAt } = await api(`/me/links/${keyPath(key)}?expiresIn=${$("share-expiry").value}`);
    $("share-url").value = url;
    $("share-result").hidden = false;
    const until = new Date(expiresAt).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
    let copied = "Copied to the clipboard.";
    try {
      await navigator.clipboard.writeText(url);
    } catch {
      copied = "Your browser did not let the page copy it: select the link and copy it.";
    }
    $("share-expires").textContent = `${copied} It works until ${until} (it may stop working sooner).`;
    $("share-url").focus();
  } catch (error) {
    if (error.status !== 401) $("share-error").textContent = `No link could be made: ${error.message}`;
  } finally {
    $("share-copy").disabled = false;
  }
}
