// The list: a folder's sub-folders and files (or a search, in the folder or everywhere) as query.js asks,
// pages of them, their rows (Download, Preview, Copy link, Delete), and a file just uploaded in its place.

import { api, keyPath, splitKey } from "./api.js";
import { folderRows, showFolder } from "./folders.js";
import { $, el, failed, followDownload, formatSize } from "./page.js";
import { apiProblem, dropShown, filterProblems, listPlan, markFields, ownFiles, rowOf, showQuery, view, wireQuery } from "./query.js";
import { deleteFile, downloadFolder, forgetSelection, selectBox } from "./selection.js";
import { isAdmin, session } from "./session.js";

const PAGE_SIZE = 50;
// An order the API has not for a list (a folder by size or time, a name search by size or name) is sorted
// in the page from the list read whole, at most this many files.
const SORT_IN_PAGE_LIMIT = 5000;
const SORT_WORDS = { name: "name", size: "size", time: "upload time" };
// The filters whose lists the page cannot tell a new file's place in: the API is asked again instead.
const FILTER_FIELDS = ["q", "ext", "from", "to", "min-size", "max-size"];

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

function formatTime(iso) {
  const date = new Date(iso);
  return { text: date.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" }), iso: date.toISOString() };
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
  showQuery();
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

export async function downloadFile(key) {
  failed("");
  try {
    const { url } = await api(`/me/download/${keyPath(key)}`, { headers: { Accept: "application/json" } });
    followDownload(url);
  } catch (error) {
    if (error.status !== 401) failed(`The file could not be downloaded: ${error.message}`, () => downloadFile(key));
  }
}

// A file just uploaded and listed: in the folder shown, it takes its place in a list by name or heads a
// newest-first list; in a sub-folder of it, that sub-folder shows; any other order is read again.
function showNewFile(item) {
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
  const replaced = before && rowOf(item.objectKey);
  const newest = view.sort === "time" && view.order === "desc" && !view.inPage;
  if (replaced && plan.browsing && view.sort === "name") {
    replaceRow(replaced, item);
    return;
  }
  if (replaced && newest) {
    dropShown(item.objectKey, replaced);
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

// A file just uploaded joins the list on screen only if it belongs there: one's own files in the folder
// shown, never another person's files an admin is looking at. A filtered list (name words, type, dates,
// sizes) and an admin's whole bucket are asked for again once the uploads of the moment are listed: the API
// says what belongs.
let listAgain = null;

export function showUploaded(item) {
  const scope = $("scope") ? $("scope").value : "me";
  if (!ownFiles() && scope !== "bucket") return;
  const filtered = FILTER_FIELDS.some((id) => $(id) && String($(id).value).trim() !== "");
  if (ownFiles() && !filtered) {
    showNewFile(item);
    return;
  }
  clearTimeout(listAgain);
  listAgain = setTimeout(() => loadList(true), 300);
}

export function wireList() {
  wireQuery(loadList);
  $("more").addEventListener("click", () => loadList(false));
}
