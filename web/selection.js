// Many files at once: checkboxes (a shift-click selects a range), "Select all on this page", and the
// selection downloaded as one zip or deleted after one confirmation (as a row's Delete is). A folder downloads
// as a zip too: the zip is download.js's, loaded at the first one (it and the ZIP writer are no part of the
// first load).

import { api, keyPath } from "./api.js";
import { $, el, failed, say } from "./page.js";
import { dropShown, rowOf } from "./query.js";
import { session } from "./session.js";

const selected = new Map(); // objectKey -> item
let lastClicked = null;
let deleted = () => {};

const boxes = () => [...$("rows").querySelectorAll('input[type="checkbox"]')];

export function selectBox(item, name) {
  const box = el("input", { type: "checkbox", ariaLabel: `Select ${name}`, checked: selected.has(item.objectKey) });
  box.addEventListener("click", (event) => {
    const all = boxes();
    const range = event.shiftKey && lastClicked && all.includes(lastClicked);
    const [from, to] = range ? [all.indexOf(lastClicked), all.indexOf(box)].sort((a, b) => a - b) : [0, -1];
    for (const other of all.slice(from, to + 1)) other.checked = box.checked;
    lastClicked = box;
    syncSelection();
  });
  box.item = item;
  return box;
}

// The selection as the boxes on the page say, and the bar that acts on it.
function syncSelection() {
  selected.clear();
  for (const box of boxes()) if (box.checked) selected.set(box.item.objectKey, box.item);
  const count = selected.size;
  const all = boxes();
  $("select-all").checked = count > 0 && count === all.length;
  $("select-all").indeterminate = count > 0 && count < all.length;
  $("selection-count").textContent = count ? `${count} selected` : "";
  $("selection-actions").hidden = count === 0;
  $("delete-selected").hidden = ![...selected.values()].every((item) => item.uploadUser === (session && session.user));
}

export function forgetSelection() {
  selected.clear();
  lastClicked = null;
  if ($("select-all")) syncSelection();
}

// ---- the zip (download.js, at its first use)

const zips = () => import("./download.js");

export const downloadFolder = async (prefix) => (await zips()).downloadFolder(prefix);

const downloadSelected = async () => (await zips()).downloadItems([...selected.values()]);

// ---- deleting

// "Delete …?" in the page's own modal dialog, for one file (a row's Delete) as for a selection: labelled,
// Cancel focused first, Escape cancels, focus back on the button that opened it. `what`: "2 files", or a
// file's name in quotes; `action`, the button that deletes. Resolves true to delete.
function confirmDelete(what, action = `Delete ${what}`) {
  const dialog = $("confirm-dialog");
  const opener = document.activeElement;
  $("confirm-title").textContent = `Delete ${what}?`;
  $("confirm-delete").textContent = action;
  return new Promise((resolve) => {
    dialog.onclose = () => {
      if (opener && opener.isConnected) opener.focus();
      resolve(dialog.returnValue === "delete");
    };
    dialog.returnValue = "";
    dialog.showModal();
    $("confirm-cancel").focus(); // the safe choice first
  });
}

// One file, a row's Delete.
export async function deleteFile(key, name, tr, confirmed = false) {
  if (!confirmed && !(await confirmDelete(`“${name}”`, "Delete"))) return;
  failed("");
  try {
    await api(`/me/files/${keyPath(key)}`, { method: "DELETE" });
    // Focus stays in the list: the next row's control, else the previous row's, else the heading.
    const near = tr.nextElementSibling || tr.previousElementSibling;
    (near ? near.querySelector(".danger") || near.querySelector("button") : $("files-title")).focus();
    dropShown(key, tr);
    say(`${name} was deleted.`);
    deleted();
  } catch (error) {
    if (error.status !== 401) failed(`${name} could not be deleted: ${error.message}`, () => deleteFile(key, name, tr, true));
  }
}

async function deleteSelected(items = [...selected.values()], confirmed = false) {
  const files = `${items.length} file${items.length === 1 ? "" : "s"}`;
  if (!items.length || (!confirmed && !(await confirmDelete(files)))) return;
  failed("");
  const refused = [];
  let lastError = null;
  for (const item of items) {
    try {
      await api(`/me/files/${keyPath(item.objectKey)}`, { method: "DELETE" });
      dropShown(item.objectKey, rowOf(item.objectKey));
    } catch (error) {
      if (error.status === 401) return;
      refused.push(item);
      lastError = error;
    }
  }
  syncSelection();
  deleted();
  const gone = items.length - refused.length;
  if (gone) say(`${gone} file${gone === 1 ? " was" : "s were"} deleted.`);
  if (refused.length) {
    failed(
      `${refused.length} of ${items.length} files could not be deleted: ${lastError.message}`,
      () => deleteSelected(refused, true),
    );
  }
  $("files-title").focus();
}

// `onDeleted`: the list's, once files are deleted.
export function wireSelection({ onDeleted }) {
  deleted = onDeleted;
  $("select-all").addEventListener("change", () => {
    for (const box of boxes()) box.checked = $("select-all").checked;
    syncSelection();
  });
  $("zip-selected").addEventListener("click", downloadSelected);
  $("delete-selected").addEventListener("click", () => deleteSelected());
  $("deselect").addEventListener("click", () => {
    for (const box of boxes()) box.checked = false;
    syncSelection();
  });
  $("confirm-form").addEventListener("submit", (event) => {
    event.preventDefault();
    $("confirm-dialog").close(event.submitter ? event.submitter.value : "");
  });
}
