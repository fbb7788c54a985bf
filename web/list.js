// The list and its filters: a folder's sub-folders and files (or a search, in the folder or everywhere),
// pages of them, the filters checked in their fields' words, Download, Delete. (Over 400 lines: the
// list's state, rows and filters change together.)

import { api, keyPath } from "./api.js";
import { folderRows, showFolder } from "./folders.js";
import { $, config, el, followDownload } from "./page.js";
import { confirmDelete, downloadFolder, forgetSelection, selectBox } from "./selection.js";
import { isAdmin, session } from "./session.js";

const PAGE_SIZE = 50;
let people = null; // people.js, once an admin types a name in "User"
// An order the API has not for a list (a folder by size or time, a name search by size or name) is sorted
// in the page from the list read whole, at most this many files.
const SORT_IN_PAGE_LIMIT = 5000;
const MAX_SIZE = 2n ** 63n - 1n;
// Search as you type: the list is asked for once typing pauses this long.
const TYPING_PAUSE_MS = 300;
const SORT_WORDS = { name: "name", size: "size", time: "upload time" };

// The list shown: the folder (relative to one's own, "" or "reports/2026/"), where to look, its order, the
// keys and sub-folders already on screen (nothing twice), and the cursor of the next page.
export const view = {
  folder: "",
  where: "folder",
  sort: "name",
  order: "asc",
  chosen: false, // a column the person chose; else each list is in its own first order
  cursor: null,
  keys: new Set(),
  folders: new Set(),
  items: [],
  generation: 0,
  inPage: false,
  truncated: false,
  request: null,
};

// A file's kind by its name's extension: its icon, and whether "Preview" is offered (the API decides).
const KINDS = {
  image: ["jpg", "jpeg", "png", "gif", "webp", "avif"],
  pdf: ["pdf"],
  text: ["txt", "md", "csv", "tsv", "log", "json", "yaml", "yml"],
  audio: ["mp3", "wav", "ogg", "oga", "m4a", "flac"],
  video: ["mp4", "m4v", "webm", "ogv"],
  archive: ["zip", "gz", "tgz", "tar", "7z", "rar", "bz2", "xz"],
};
export const PREVIEWED = ["image", "pdf", "text", "audio", "video"];

export function kindOf(name) {
  const ext = name.includes(".") ? name.slice(name.lastIndexOf(".") + 1).toLowerCase() : "";
  return Object.keys(KINDS).find((kind) => KINDS[kind].includes(ext)) || "file";
}

export function formatSize(bytes) {
  if (bytes < 1024) return `${bytes} B`;
  const units = ["KB", "MB", "GB", "TB"];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`;
}

function formatTime(iso) {
  const date = new Date(iso);
  return { text: date.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" }), iso: date.toISOString() };
}

export function splitKey(key) {
  const cut = key.lastIndexOf("/");
  const split = cut < 0 ? { folder: "", name: key } : { folder: key.slice(0, cut), name: key.slice(cut + 1) };
  // One's own files live under one's own prefix: show the folder within it.
  const own = session && session.user;
  if (own && split.folder === own) split.folder = "";
  else if (own && split.folder.startsWith(`${own}/`)) split.folder = split.folder.slice(own.length + 1);
  return split;
}

// A size field in whole bytes.
const bytes = (id, round) => BigInt(round($(id).value * $("size-unit").value));

function listQuery() {
  const params = new URLSearchParams();
  const q = $("q").value.trim();
  if (q) params.set("q", q);
  const ext = $("ext").value.trim().replace(/^\.+/, "");
  if (ext) params.set("ext", ext);
  if (isAdmin()) {
    const scope = $("scope").value;
    const typed = $("scope-user").value.trim();
    if (scope === "user" && typed) params.set("user", people ? people.userOf(typed) : typed);
    if (scope === "bucket" && config.bucket) params.set("bucket", config.bucket);
  }
  // The browser's own days: from the start of the first to the end of the last, as UTC instants.
  if ($("from").value) params.set("from", new Date(`${$("from").value}T00:00:00`).toISOString());
  if ($("to").value) params.set("to", new Date(`${$("to").value}T23:59:59.999`).toISOString());
  if ($("min-size").value) params.set("minSize", bytes("min-size", Math.ceil));
  if ($("max-size").value) params.set("maxSize", bytes("max-size", Math.floor));
  return params;
}

// The API's query parameters, as the page's fields.
const FIELD_OF = { q: "q", ext: "ext", from: "from", to: "to", minSize: "min-size", maxSize: "max-size", user: "scope-user" };
const label = (id) => `“${document.querySelector(`label[for="${id}"]`).textContent}”`;

// What is wrong with the filters, in the fields' terms: [[field ids], message] each.
function filterProblems() {
  const problems = [];
  for (const id of ["min-size", "max-size"]) {
    const input = $(id);
    if (!input.checkValidity()) problems.push([[id], `${label(id)}: ${input.validationMessage}`]);
    else if (input.value && bytes(id, Math.floor) > MAX_SIZE) problems.push([[id], `${label(id)} is larger than any file.`]);
  }
  if (!problems.length && $("min-size").value && $("max-size").value && bytes("min-size", Math.ceil) > bytes("max-size", Math.floor)) {
    problems.push([["min-size", "max-size"], `${label("min-size")} must not be more than ${label("max-size")}.`]);
  }
  if ($("to").value && $("from").value > $("to").value) {
    problems.push([["from", "to"], `${label("from")} must not be after ${label("to")}.`]);
  }
  return problems;
}

// Marks the fields of `problems` invalid, described by the filters' error, and no others.
function markFields(problems) {
  const wrong = problems.flatMap(([ids]) => ids);
  for (const id of Object.values(FIELD_OF)) {
    for (const [name, value] of [["aria-invalid", "true"], ["aria-describedby", "filter-error"]]) {
      if (wrong.includes(id)) $(id).setAttribute(name, value);
      else $(id).removeAttribute(name);
    }
  }
  $("filter-error").textContent = problems.map(([, message]) => message).join(" ");
  // A folded filter that is wrong is shown.
  if (wrong.some((id) => $("more-filters").contains($(id)))) $("more-filters").open = true;
}

// The folded filters say how many of them are on, so a list they narrow never looks whole.
const FOLDED_FILTERS = ["ext", "from", "to", "min-size", "max-size"];

function showFiltersOn() {
  const on = FOLDED_FILTERS.filter((id) => $(id).value.trim() !== "").length;
  $("filters-on").textContent = on ? ` (${on} on)` : "";
}

// The API's refusal of a parameter: its field's problem, in the API's words after the field's label.
function apiProblem(message) {
  const match = /^(?:query parameter )?(\w+)/.exec(message);
  const id = match && FIELD_OF[match[1]];
  return id ? [[id], message.replace(match[0], label(id))] : null;
}

// The list's error; "Try again" repeats what failed when `retry` is given.
export function failed(message, retry = null) {
  if (!retry && document.activeElement === $("retry")) $("files-title").focus();
  $("retry").onclick = retry;
  $("retry").hidden = !retry;
  $("list-error").textContent = message;
}

function scopeLabel() {
  if (!isAdmin() || $("scope").value === "me") return "Your files";
  if ($("scope").value === "bucket") return "All files of the bucket";
  return `Files of ${$("scope-user").value.trim() || "…"}`;
}

// Folders are one's own: an admin's choice of a user or the bucket lists as before.
export const ownFiles = () => !isAdmin() || $("scope").value === "me";

// Uploads go to one's own files only (POST /me/uploads has no "user"): while an admin looks at another
// person's files or the whole bucket, the upload controls give way to a line saying so.
function showUploadPlace() {
  $("upload").hidden = !ownFiles();
  $("upload-elsewhere").hidden = ownFiles();
}

// The request for the list shown, and whether the API orders it as asked (else it is sorted in the page).
// A folder without filters is its sub-folders and files (`prefix`, `delimiter`); with filters, everything
// under it (`prefix`); everywhere, one's whole list. `prefix` and `delimiter` lists are in key order, which
// within a folder is name order; `q` and `ext` lists in upload order; the rest by upload time or size.
function listPlan() {
  const params = listQuery();
  const filtered = [...params.keys()].some((name) => name !== "user" && name !== "bucket");
  const inFolder = ownFiles() && view.where === "folder";
  if (inFolder && view.folder) params.set("prefix", view.folder);
  if (inFolder && !filtered) params.set("delimiter", "/");
  let orders = ["time", "size"];
  if (params.has("prefix") || params.has("delimiter")) orders = ["name"];
  else if (params.has("q") || params.has("ext")) orders = ["time"];
  return { params, filtered, orders, browsing: params.has("delimiter"), byApi: orders.includes(view.sort) };
}

export async function loadList(reset) {
  const problems = filterProblems();
  markFields(problems);
  if (problems.length) return;
  const generation = reset ? ++view.generation : view.generation;
  if (reset) {
    if (view.request) view.request.abort(); // the previous list is no longer wanted
    view.request = new AbortController();
    view.cursor = null;
    view.keys = new Set();
    view.folders = new Set();
    view.items = [];
    view.truncated = false;
    $("rows").replaceChildren();
    $("folder-rows").replaceChildren();
    forgetSelection();
  }
  failed("");
  $("more").disabled = true;
  $("files-title").textContent = scopeLabel();
  showFiltersOn();
  $("results").classList.toggle("owners", !ownFiles());
  showUploadPlace();
  let plan = listPlan();
  if (!view.chosen && plan.orders[0] !== view.sort) {
    [view.sort, view.order] = [plan.orders[0], plan.orders[0] === "name" ? "asc" : "desc"];
    plan = listPlan();
  }
  view.inPage = !plan.byApi;
  showFolder(plan.browsing);
  const signal = view.request.signal;
  try {
    if (!plan.byApi) {
      await loadEverything(generation, plan.params, signal);
    } else {
      const params = plan.params;
      params.set("order", view.order);
      // Each order is an index's: a list by size reads the size index (a person's or the bucket's); by
      // time, a person's list is in upload order and the bucket's is asked for it (its time index).
      if (view.sort === "size") params.set("sort", "size");
      else if (view.sort === "time" && params.has("bucket") && !params.has("q")) params.set("sort", "uploadDate");
      params.set("limit", String(PAGE_SIZE));
      if (view.cursor) params.set("cursor", view.cursor);
      // A filtered page may be short or even empty and still have a cursor: read on until something shows.
      let added = 0;
      let pages = 0;
      do {
        const page = await api(`/me/files?${params}`, { signal });
        if (generation !== view.generation) return;
        showIndexState(page.indexState);
        added += addItems(page.items) + addFolders(page.commonPrefixes);
        view.cursor = page.nextCursor;
        if (view.cursor) params.set("cursor", view.cursor);
        pages += 1;
      } while (view.cursor && added < PAGE_SIZE && pages < 10);
    }
  } catch (error) {
    if (generation !== view.generation) return;
    const problem = error.status === 400 && apiProblem(error.message);
    if (problem) markFields([problem]);
    else if (error.status !== 401) {
      failed(`Your files could not be loaded: ${error.message}`, error.status === 400 ? null : () => loadList(reset));
    }
  }
  if (generation === view.generation) {
    if (plan.browsing) addFolders(folderRows(view.folder), true);
    renderState();
  }
}

const byName = (a, b) => splitKey(a.objectKey).name.localeCompare(splitKey(b.objectKey).name, undefined, { numeric: true });
const IN_PAGE_ORDER = {
  name: byName,
  size: (a, b) => a.size - b.size,
  time: (a, b) => (a.uploadDate < b.uploadDate ? -1 : a.uploadDate > b.uploadDate ? 1 : 0),
};

async function loadEverything(generation, params, signal) {
  params.set("limit", "1000");
  let cursor = null;
  let all = [];
  const folders = [];
  do {
    if (cursor) params.set("cursor", cursor);
    const page = await api(`/me/files?${params}`, { signal });
    if (generation !== view.generation) return;
    showIndexState(page.indexState);
    all = all.concat(page.items);
    folders.push(...(page.commonPrefixes || []));
    cursor = page.nextCursor;
  } while (cursor && all.length < SORT_IN_PAGE_LIMIT);
  const compare = IN_PAGE_ORDER[view.sort];
  const sign = view.order === "desc" ? -1 : 1;
  all.sort((a, b) => sign * compare(a, b) || a.objectKey.localeCompare(b.objectKey));
  view.cursor = null;
  view.truncated = Boolean(cursor);
  addFolders(folders);
  addItems(all);
}

// Sub-folders (relative to one's own folder, "reports/2026/"), each once, in name order above the files.
function addFolders(prefixes = [], pageOnly = false) {
  let added = 0;
  for (const prefix of prefixes || []) {
    if (view.folders.has(prefix)) continue;
    view.folders.add(prefix);
    const rows = [...$("folder-rows").children];
    const next = rows.find((tr) => tr.dataset.folder.localeCompare(prefix, undefined, { numeric: true }) > 0);
    $("folder-rows").insertBefore(folderRow(prefix, pageOnly), next || null);
    added += 1;
  }
  return added;
}

function folderRow(prefix, pageOnly) {
  const name = prefix.slice(view.folder.length).replace(/\/$/, "");
  const tr = el("tr", { className: "folder-row" });
  tr.dataset.folder = prefix;
  const open = el("button", { type: "button", className: "link", textContent: name, ariaLabel: `Open folder ${name}` });
  open.onclick = () => openFolder(prefix);
  const actions = el("td", { className: "actions" });
  if (!pageOnly) actions.append(button("Download", `Download folder ${name} as a zip`, () => downloadFolder(prefix)));
  tr.append(
    el("td", { className: "select" }),
    el("th", { scope: "row", className: "name" }, open),
    el("td", { className: "owner" }),
    el("td", { className: "folder", textContent: pageOnly ? "new: empty until a file is uploaded into it" : "folder" }),
    el("td", { className: "size" }),
    el("td"),
    actions,
  );
  return tr;
}

export function openFolder(prefix) {
  view.folder = prefix;
  loadList(true);
  $("files-title").focus();
}

function addItems(items) {
  let added = 0;
  for (const item of items) {
    if (view.keys.has(item.objectKey)) continue;
    view.keys.add(item.objectKey);
    view.items.push(item);
    $("rows").append(row(item));
    added += 1;
  }
  return added;
}

function row(item) {
  let { folder, name } = splitKey(item.objectKey);
  // Another person's folder within their own (an admin's view): never the raw id their keys start with.
  const theirs = item.uploadUser && item.uploadUser !== (session && session.user) ? item.uploadUser : null;
  if (theirs && (folder === theirs || folder.startsWith(`${theirs}/`))) folder = folder.slice(theirs.length + 1);
  const when = formatTime(item.uploadDate);
  const tr = el("tr");
  tr.dataset.key = item.objectKey;
  const select = el("td", { className: "select" });
  if (item.uploadUser === (session && session.user) || isAdmin()) select.append(selectBox(item, name));
  const own = item.uploadUser === (session && session.user);
  const kind = kindOf(name);
  const actions = el("td", { className: "actions" }, button("Download", `Download ${name}`, () => downloadFile(item.objectKey)));
  // Share links and previews are loaded at their first use, not with the page.
  if (PREVIEWED.includes(kind)) {
    actions.append(button("Preview", `Preview ${name}`, async () => (await import("./preview.js")).previewFile(item.objectKey, name)));
  }
  if (own || isAdmin()) {
    actions.append(button("Copy link", `Copy link to ${name}`, async () => (await import("./share.js")).shareFile(item.objectKey, name)));
  }
  if (own) actions.append(button("Delete", `Delete ${name}`, () => deleteFile(item.objectKey, name, tr), "danger"));
  const th = el("th", { scope: "row", className: "name", textContent: name });
  th.dataset.kind = kind; // its icon (style.css)
  // Whose file, where a list mixes people's (an admin's): their name, never the raw id of the key.
  const owner = el("td", { className: "owner", textContent: item.ownerName || "" });
  tr.append(
    select,
    th,
    owner,
    el("td", { className: "folder", textContent: folder }),
    el("td", { className: "size", textContent: formatSize(item.size), title: `${item.size} bytes` }),
    el("td", {}, el("time", { dateTime: when.iso, textContent: when.text })),
    actions,
  );
  return tr;
}

export function button(text, ariaLabel, onclick, className = "") {
  return el("button", { type: "button", textContent: text, ariaLabel, onclick, className });
}

export function renderState() {
  const count = view.items.length;
  const folders = $("folder-rows").children.length;
  $("results").hidden = count + folders === 0;
  $("more").hidden = !view.cursor;
  $("more").disabled = false;
  const empty = $("empty");
  empty.hidden = count + folders > 0 || Boolean($("list-error").textContent);
  const { filtered } = listPlan();
  if (filtered) empty.textContent = "No files match these filters.";
  else if (!ownFiles()) empty.textContent = "No files here.";
  else if (view.folder && view.where === "folder") {
    empty.textContent = "This folder is empty. Upload files into it, or drop them here.";
  } else empty.textContent = "No files yet. Upload files, or drop them here.";
  empty.classList.toggle("drop-here", !filtered && ownFiles());
  // The index cannot count a list without reading it whole: the caption counts what is shown.
  let caption = `${count} file${count === 1 ? "" : "s"}`;
  if (folders) caption = `${folders} folder${folders === 1 ? "" : "s"}, ${caption}`;
  if (view.cursor) caption += " so far";
  if (view.inPage) {
    caption += `, sorted by ${SORT_WORDS[view.sort]} in the page`;
    if (view.truncated) caption += ` among the first ${SORT_IN_PAGE_LIMIT}`;
  }
  $("results-caption").textContent = caption;
  for (const sort of ["name", "size", "time"]) {
    $(`${sort}-header`).setAttribute("aria-sort", view.sort === sort ? `${view.order}ending` : "none");
  }
}

function showIndexState(state) {
  const notice = $("notice");
  if (state === "BUILDING") {
    notice.textContent = "The index is being built: some files may be missing from the list for now.";
    notice.hidden = false;
  } else if (notice.dataset.kind !== "message") {
    notice.hidden = true;
    notice.textContent = "";
  }
}

// The same column again turns the order round; another starts A to Z, or largest or newest first.
function sortBy(sort) {
  const first = sort === "name" ? "asc" : "desc";
  view.order = view.sort === sort ? (view.order === "desc" ? "asc" : "desc") : first;
  view.sort = sort;
  view.chosen = true;
  loadList(true);
}

export async function downloadFile(key) {
  failed("");
  try {
    const { url } = await api(`/me/download/${keyPath(key)}`, { headers: { Accept: "application/json" } });
    followDownload(url);
  } catch (error) {
    if (error.status !== 401) failed(`The file could not be downloaded: ${error.message}`, () => downloadFile(key));
  }
}

async function deleteFile(key, name, tr, confirmed = false) {
  if (!confirmed && !(await confirmDelete(`“${name}”`, "Delete"))) return;
  failed("");
  try {
    await api(`/me/files/${keyPath(key)}`, { method: "DELETE" });
    // Focus stays in the list: the next row's control, else the previous row's, else the heading.
    const near = tr.nextElementSibling || tr.previousElementSibling;
    (near ? near.querySelector(".danger") || near.querySelector("button") : $("files-title")).focus();
    tr.remove();
    view.keys.delete(key);
    view.items = view.items.filter((item) => item.objectKey !== key);
    say(`${name} was deleted.`);
    renderState();
  } catch (error) {
    if (error.status !== 401) failed(`${name} could not be deleted: ${error.message}`, () => deleteFile(key, name, tr, true));
  }
}

export function say(message) {
  const notice = $("notice");
  notice.dataset.kind = "message";
  notice.textContent = message;
  notice.hidden = false;
  setTimeout(() => {
    if (notice.textContent === message) forgetNotice();
  }, 6000);
}

// The page's last words ("notes.txt was deleted", the index's state) go: at sign-out, they were about
// the files of the person who signed out.
export function forgetNotice() {
  const notice = $("notice");
  notice.dataset.kind = "";
  notice.textContent = "";
  notice.hidden = true;
}

// A file just uploaded and listed: in the folder shown, it takes its place in a list by name or heads a
// newest-first list; in a sub-folder of it, that sub-folder shows; any other order is read again.
export function showNewFile(item) {
  const own = session && session.user ? `${session.user}/` : "";
  const relative = item.objectKey.startsWith(own) ? item.objectKey.slice(own.length) : item.objectKey;
  const plan = listPlan();
  if (plan.browsing) {
    if (!relative.startsWith(view.folder)) return; // uploaded elsewhere: not in this folder
    const rest = relative.slice(view.folder.length);
    if (rest.includes("/")) {
      addFolders([view.folder + rest.slice(0, rest.indexOf("/") + 1)]);
      renderState();
      return;
    }
  }
  // A file replaced: its row shows the new size and time, where the order keeps it (by name), else at the
  // head of a newest-first list; in any other order the list is read again.
  const before = view.items.find((shown) => shown.objectKey === item.objectKey);
  if (before && before.uploadDate === item.uploadDate && before.eTag === item.eTag) return; // shown as it is
  const replaced = before && $("rows").querySelector(`tr[data-key="${CSS.escape(item.objectKey)}"]`);
  const newest = view.sort === "time" && view.order === "desc" && !view.inPage;
  if (replaced && plan.browsing && view.sort === "name") {
    replaceRow(replaced, item);
    return;
  }
  if (replaced && newest) {
    dropRow(replaced, item.objectKey);
  } else if (before) {
    loadList(true);
    return;
  }
  if (!newest && !(plan.browsing && view.sort === "name")) {
    loadList(true);
    return;
  }
  const shown = [...$("rows").children];
  const sign = view.order === "desc" ? -1 : 1;
  const next = newest ? shown[0] : shown.find((tr) => sign * byName(item, { objectKey: tr.dataset.key }) < 0);
  // After the last row shown of a list with more pages, it comes with "Show more".
  if (!next && view.cursor) return;
  view.keys.add(item.objectKey);
  view.items.push(item);
  $("rows").insertBefore(row(item), next || null);
  renderState();
}

// `tr`, a row shown, as `item` now is; focus stays on the same control of the row.
function replaceRow(tr, item) {
  const fresh = row(item);
  const focused = tr.contains(document.activeElement) ? document.activeElement.getAttribute("aria-label") : null;
  tr.replaceWith(fresh);
  view.items = view.items.map((shown) => (shown.objectKey === item.objectKey ? item : shown));
  if (focused) fresh.querySelector(`[aria-label="${CSS.escape(focused)}"]`)?.focus();
  renderState();
}

function dropRow(tr, key) {
  tr.remove();
  view.keys.delete(key);
  view.items = view.items.filter((shown) => shown.objectKey !== key);
}

export function wireList() {
  let typing = null;
  $("filters").addEventListener("submit", (event) => {
    event.preventDefault();
    clearTimeout(typing);
    loadList(true);
  });
  // Search as you type: once typing pauses; the list asked for before is cancelled.
  $("q").addEventListener("input", () => {
    clearTimeout(typing);
    typing = setTimeout(() => loadList(true), TYPING_PAUSE_MS);
  });
  $("ext").addEventListener("change", () => loadList(true));
  for (const where of document.querySelectorAll('input[name="where"]')) {
    where.addEventListener("change", () => {
      view.where = where.value;
      loadList(true);
    });
  }
  $("clear-filters").addEventListener("click", () => {
    // Every filter back to its default, the unit included; whose files stays as chosen.
    const scope = [$("scope").value, $("scope-user").value];
    $("filters").reset();
    [$("scope").value, $("scope-user").value] = scope;
    view.where = document.querySelector('input[name="where"]:checked').value;
    loadList(true);
  });
  $("scope").addEventListener("change", () => {
    const one = $("scope").value === "user";
    $("scope-user").hidden = !one;
    $("scope-user-label").hidden = !one;
    showUploadPlace();
    if (!one) loadList(true);
  });
  $("scope-user").addEventListener("input", async () => (people ||= await import("./people.js")).suggest());
  $("sort-name").addEventListener("click", () => sortBy("name"));
  $("sort-size").addEventListener("click", () => sortBy("size"));
  $("sort-time").addEventListener("click", () => sortBy("time"));
  $("more").addEventListener("click", () => loadList(false));
}
