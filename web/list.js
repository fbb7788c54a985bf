// The list and its filters: pages of files, the filters checked in their fields' words, Download, Delete.

import { api, keyPath } from "./api.js";
import { $, config, el } from "./page.js";
import { isAdmin, session } from "./session.js";

const PAGE_SIZE = 50;
// A name search has no size order in the API: sorting one by size reads it whole, at most this many files.
const SIZE_SORT_LIMIT = 5000;
const MAX_SIZE = 2n ** 63n - 1n;

// The list shown: its query, the keys already on screen (nothing twice), and the cursor of the next page.
const view = { sort: "time", order: "desc", cursor: null, keys: new Set(), items: [], generation: 0 };

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

function splitKey(key) {
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
  if (isAdmin()) {
    const scope = $("scope").value;
    if (scope === "user" && $("scope-user").value.trim()) params.set("user", $("scope-user").value.trim());
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
const FIELD_OF = { q: "q", from: "from", to: "to", minSize: "min-size", maxSize: "max-size", user: "scope-user" };
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
}

// The API's refusal of a parameter: its field's problem, in the API's words after the field's label.
function apiProblem(message) {
  const match = /^(?:query parameter )?(\w+)/.exec(message);
  const id = match && FIELD_OF[match[1]];
  return id ? [[id], message.replace(match[0], label(id))] : null;
}

// The list's error; "Try again" repeats what failed when `retry` is given.
function failed(message, retry = null) {
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

export async function loadList(reset) {
  const problems = filterProblems();
  markFields(problems);
  if (problems.length) return;
  const generation = reset ? ++view.generation : view.generation;
  if (reset) {
    view.cursor = null;
    view.keys = new Set();
    view.items = [];
    view.truncated = false;
    $("rows").replaceChildren();
  }
  failed("");
  $("more").disabled = true;
  $("files-title").textContent = scopeLabel();
  try {
    if (view.sort === "size" && listQuery().has("q")) {
      await loadEverything(generation);
    } else {
      const params = listQuery();
      params.set("order", view.order);
      // Each order is an index's: a list by size reads the size index (a person's or the bucket's); by
      // time, a person's list is in upload order and the bucket's is asked for it (its time index).
      if (view.sort === "size") params.set("sort", "size");
      else if (params.has("bucket") && !params.has("q")) params.set("sort", "uploadDate");
      params.set("limit", String(PAGE_SIZE));
      if (view.cursor) params.set("cursor", view.cursor);
      // A filtered page may be short or even empty and still have a cursor: read on until something shows.
      let added = 0;
      let pages = 0;
      do {
        const page = await api(`/me/files?${params}`);
        if (generation !== view.generation) return;
        showIndexState(page.indexState);
        added += addItems(page.items);
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
  if (generation === view.generation) renderState();
}

async function loadEverything(generation) {
  const params = listQuery();
  params.set("limit", "1000");
  let cursor = null;
  let all = [];
  do {
    if (cursor) params.set("cursor", cursor);
    const page = await api(`/me/files?${params}`);
    if (generation !== view.generation) return;
    showIndexState(page.indexState);
    all = all.concat(page.items);
    cursor = page.nextCursor;
  } while (cursor && all.length < SIZE_SORT_LIMIT);
  all.sort((a, b) => (view.order === "desc" ? b.size - a.size : a.size - b.size) || a.objectKey.localeCompare(b.objectKey));
  view.cursor = null;
  view.truncated = Boolean(cursor);
  addItems(all);
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
  const { folder, name } = splitKey(item.objectKey);
  const when = formatTime(item.uploadDate);
  const tr = el("tr");
  tr.dataset.key = item.objectKey;
  const actions = el("td", { className: "actions" }, button("Download", `Download ${name}`, () => downloadFile(item.objectKey)));
  if (item.uploadUser === (session && session.user)) {
    actions.append(button("Delete", `Delete ${name}`, () => deleteFile(item.objectKey, name, tr), "danger"));
  }
  tr.append(
    el("th", { scope: "row", className: "name", textContent: name }),
    el("td", { className: "folder", textContent: folder }),
    el("td", { className: "size", textContent: formatSize(item.size), title: `${item.size} bytes` }),
    el("td", {}, el("time", { dateTime: when.iso, textContent: when.text })),
    actions,
  );
  return tr;
}

function button(text, ariaLabel, onclick, className = "") {
  return el("button", { type: "button", textContent: text, ariaLabel, onclick, className });
}

function renderState() {
  const count = view.items.length;
  $("results").hidden = count === 0;
  $("more").hidden = !view.cursor;
  $("more").disabled = false;
  const empty = $("empty");
  empty.hidden = count > 0 || Boolean($("list-error").textContent);
  const filtered = [...listQuery().keys()].some((name) => name !== "user" && name !== "bucket");
  empty.textContent = filtered ? "No files match these filters." : "No files yet. Upload one above.";
  let caption = `${count} file${count === 1 ? "" : "s"}`;
  if (view.cursor) caption += " so far";
  if (view.sort === "size" && view.truncated) caption += ` (largest among the first ${SIZE_SORT_LIMIT})`;
  $("results-caption").textContent = caption;
  for (const sort of ["size", "time"]) {
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

// The same column again turns the order round; another starts largest or newest first.
function sortBy(sort) {
  view.order = view.sort === sort && view.order === "desc" ? "asc" : "desc";
  view.sort = sort;
  loadList(true);
}

async function downloadFile(key) {
  failed("");
  try {
    const { url } = await api(`/me/download/${keyPath(key)}`, { headers: { Accept: "application/json" } });
    const link = el("a", { href: url, rel: "noopener" });
    document.body.append(link);
    link.click();
    link.remove();
  } catch (error) {
    if (error.status !== 401) failed(`The file could not be downloaded: ${error.message}`, () => downloadFile(key));
  }
}

async function deleteFile(key, name, tr, confirmed = false) {
  if (!confirmed && !window.confirm(`Delete ${name}? This cannot be undone.`)) return;
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

function say(message) {
  const notice = $("notice");
  notice.dataset.kind = "message";
  notice.textContent = message;
  notice.hidden = false;
  setTimeout(() => {
    if (notice.textContent === message) {
      notice.dataset.kind = "";
      notice.hidden = true;
    }
  }, 6000);
}

// A file just uploaded and listed: it heads a newest-first list; any other order is read again.
export function showNewFile(item) {
  if (view.sort === "time" && view.order === "desc" && !view.keys.has(item.objectKey)) {
    view.keys.add(item.objectKey);
    view.items.unshift(item);
    $("rows").prepend(row(item));
    renderState();
  } else {
    loadList(true);
  }
}

export function wireList() {
  $("filters").addEventListener("submit", (event) => {
    event.preventDefault();
    loadList(true);
  });
  $("clear-filters").addEventListener("click", () => {
    // Every filter back to its default, the unit included; whose files stays as chosen.
    const scope = [$("scope").value, $("scope-user").value];
    $("filters").reset();
    [$("scope").value, $("scope-user").value] = scope;
    loadList(true);
  });
  $("scope").addEventListener("change", () => {
    const one = $("scope").value === "user";
    $("scope-user").hidden = !one;
    $("scope-user-label").hidden = !one;
    if (!one) loadList(true);
  });
  $("sort-size").addEventListener("click", () => sortBy("size"));
  $("sort-time").addEventListener("click", () => sortBy("time"));
  $("more").addEventListener("click", () => loadList(false));
}
