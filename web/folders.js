// Folders: where the list is (breadcrumbs, "Up"), new folders, and uploads that keep a folder's structure
// (chosen or dropped on the list).
//
// S3 has no folders, only keys with "/". A new folder lives in the page until a file is uploaded into it,
// then it is that file's key prefix like any other: the API's uploads take no empty name (a "folder/"
// marker object could not be made through them), and a marker would be an entry of the index, listed and
// found as a nameless file.

import { $, el } from "./page.js";
import { ownFiles, view } from "./query.js";

// Folders made in the page and not yet holding a file ("reports/2026/"), for this tab's life.
const created = new Set();
// The folder of a dropped file within what was dropped ("photos/2024"), for files read from a dropped folder.
const droppedIn = new WeakMap();
let openFolder = () => {};

// The page's new folders directly in `folder`.
export function folderRows(folder) {
  const inside = (prefix) => prefix.length > folder.length && prefix.startsWith(folder);
  return [...created].filter((prefix) => inside(prefix) && !prefix.slice(folder.length, -1).includes("/"));
}

// The breadcrumbs and folder actions for the list shown; `browsing`: a folder's own list, not a search.
export function showFolder(browsing) {
  const own = ownFiles();
  $("folder-bar").hidden = !own;
  $("where-fields").hidden = !own;
  if (!own) return;
  const parts = view.folder.split("/").filter(Boolean);
  const crumbs = [["Your files", ""], ...parts.map((part, at) => [part, `${parts.slice(0, at + 1).join("/")}/`])];
  $("crumbs").replaceChildren(
    ...crumbs.map(([name, prefix], at) => {
      if (at === crumbs.length - 1) return el("li", {}, el("span", { textContent: name, ariaCurrent: "location" }));
      const go = el("button", { type: "button", className: "link", textContent: name });
      go.onclick = () => openFolder(prefix);
      return el("li", {}, go);
    }),
  );
  $("folder-up").hidden = !parts.length;
  $("folder-bar").dataset.browsing = String(browsing);
}

const parentOf = (prefix) => prefix.replace(/[^/]*\/$/, "");

// A folder's name, checked as the API checks a folder of an upload, in the dialog's words; null if good.
function folderNameProblem(name) {
  if (!name) return "Give the folder a name.";
  if (name.includes("/") || name.includes("\\")) return "A folder's name cannot hold “/” or “\\”.";
  if (name === "." || name === "..") return "“.” and “..” are not folder names.";
  if (/[\u0000-\u001f\u007f]/.test(name)) return "A folder's name cannot hold control characters.";
  if (new TextEncoder().encode(name).length > 255) return "A folder's name is at most 255 bytes.";
  return null;
}

function newFolder() {
  const dialog = $("folder-dialog");
  const opener = document.activeElement;
  $("folder-name").value = "";
  $("folder-name").removeAttribute("aria-invalid");
  $("folder-name-error").textContent = "";
  dialog.showModal();
  dialog.onclose = () => opener && opener.focus();
}

function createFolder(event) {
  event.preventDefault();
  const name = $("folder-name").value.trim();
  const problem = folderNameProblem(name);
  if (problem) {
    $("folder-name").setAttribute("aria-invalid", "true");
    $("folder-name-error").textContent = problem;
    $("folder-name").focus();
    return;
  }
  const prefix = `${view.folder}${name}/`;
  created.add(prefix);
  $("folder-dialog").onclose = null;
  $("folder-dialog").close();
  openFolder(prefix);
}

// Where an upload goes: the folder shown, and within it the file's own folder when a folder was dropped
// or chosen ("" for one's top folder).
export function uploadFolderOf(file) {
  const inside = droppedIn.get(file) ?? (file.webkitRelativePath || "").split("/").slice(0, -1).join("/");
  const folder = `${view.folder}${inside}`.replace(/\/+$/, "");
  // A new folder holds a file now: from here on it is listed as any other.
  for (let prefix = `${folder}/`; prefix !== "/" && prefix; prefix = parentOf(prefix)) created.delete(prefix);
  return folder;
}

// Every file of a drop, those of dropped folders with their place in them (read before the event ends:
// the browser keeps a drop's items for the event only).
async function filesOfDrop(data) {
  const entries = [...(data.items || [])].map((item) => item.webkitGetAsEntry && item.webkitGetAsEntry());
  if (!entries.length || entries.some((entry) => !entry)) return [...data.files];
  const files = [];
  const walk = async (entry, folder) => {
    if (entry.isFile) {
      const file = await new Promise((resolve, reject) => entry.file(resolve, reject));
      droppedIn.set(file, folder);
      files.push(file);
      return;
    }
    const reader = entry.createReader();
    const inside = folder ? `${folder}/${entry.name}` : entry.name;
    // A directory reader answers in batches until an empty one.
    for (;;) {
      const batch = await new Promise((resolve, reject) => reader.readEntries(resolve, reject));
      if (!batch.length) break;
      for (const child of batch) await walk(child, inside);
    }
  };
  for (const entry of entries) await walk(entry, "");
  return files;
}

// `open(prefix)`: the list of a folder; `upload(files, folderOf)`: uploads.js's.
export function wireFolders({ open, upload }) {
  openFolder = open;
  $("folder-up").addEventListener("click", () => openFolder(parentOf(view.folder)));
  $("new-folder").addEventListener("click", newFolder);
  $("folder-form").addEventListener("submit", createFolder);
  $("folder-cancel").addEventListener("click", () => $("folder-dialog").close());
  $("folder-input").addEventListener("change", (event) => {
    upload([...event.target.files], uploadFolderOf);
    event.target.value = "";
  });
  const zone = $("drop-zone");
  // Only into one's own files (another person's list, an admin's view, takes none), and only on the
  // list: a file dropped anywhere else on the page is not opened by the browser in the page's place.
  const takes = (event) => zone.contains(event.target) && ownFiles() && !$("files-view").hidden;
  window.addEventListener("dragover", (event) => {
    event.preventDefault();
    event.dataTransfer.dropEffect = takes(event) ? "copy" : "none";
    zone.classList.toggle("over", takes(event));
  });
  zone.addEventListener("dragleave", (event) => {
    if (!zone.contains(event.relatedTarget)) zone.classList.remove("over");
  });
  window.addEventListener("drop", async (event) => {
    event.preventDefault();
    zone.classList.remove("over");
    if (takes(event)) upload(await filesOfDrop(event.dataTransfer), uploadFolderOf);
  });
}
