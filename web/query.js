// The list's query: the folder, where to look, the order (`view`, with what is on screen), whose files and
// the filters, checked in their fields' words; the request they make (`listPlan`).

import { $, config } from "./page.js";
import { isAdmin } from "./session.js";

let people = null; // people.js, once an admin types a name in "User"
const MAX_SIZE = 2n ** 63n - 1n;
// Search as you type: the list is asked for once typing pauses this long.
const TYPING_PAUSE_MS = 300;

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

export const rowOf = (key) => $("rows").querySelector(`tr[data-key="${CSS.escape(key)}"]`);

// A file no longer on screen.
export function dropShown(key, tr) {
  if (tr) tr.remove();
  view.keys.delete(key);
  view.items = view.items.filter((shown) => shown.objectKey !== key);
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
export function filterProblems() {
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
export function markFields(problems) {
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

// The API's refusal of a parameter: its field's problem, in the API's words after the field's label.
export function apiProblem(message) {
  const match = /^(?:query parameter )?(\w+)/.exec(message);
  const id = match && FIELD_OF[match[1]];
  return id ? [[id], message.replace(match[0], label(id))] : null;
}

// The folded filters say how many of them are on, so a list they narrow never looks whole.
const FOLDED_FILTERS = ["ext", "from", "to", "min-size", "max-size"];

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

export function showQuery() {
  $("files-title").textContent = scopeLabel();
  const on = FOLDED_FILTERS.filter((id) => $(id).value.trim() !== "").length;
  $("filters-on").textContent = on ? ` (${on} on)` : "";
  $("results").classList.toggle("owners", !ownFiles());
  showUploadPlace();
}

// The request for the list shown, and whether the API orders it as asked (else it is sorted in the page).
// A folder without filters is its sub-folders and files (`prefix`, `delimiter`); with filters, everything
// under it (`prefix`); everywhere, one's whole list. `prefix` and `delimiter` lists are in key order, which
// within a folder is name order; `q` and `ext` lists in upload order; the rest by upload time or size.
export function listPlan() {
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

// `load(true)`: the list asked for from its start.
export function wireQuery(load) {
  let typing = null;
  $("filters").addEventListener("submit", (event) => {
    event.preventDefault();
    clearTimeout(typing);
    load(true);
  });
  // Search as you type: once typing pauses; the list asked for before is cancelled.
  $("q").addEventListener("input", () => {
    clearTimeout(typing);
    typing = setTimeout(() => load(true), TYPING_PAUSE_MS);
  });
  $("ext").addEventListener("change", () => load(true));
  for (const where of document.querySelectorAll('input[name="where"]')) {
    where.addEventListener("change", () => {
      view.where = where.value;
      load(true);
    });
  }
  $("clear-filters").addEventListener("click", () => {
    // Every filter back to its default, the unit included; whose files stays as chosen.
    const scope = [$("scope").value, $("scope-user").value];
    $("filters").reset();
    [$("scope").value, $("scope-user").value] = scope;
    view.where = document.querySelector('input[name="where"]:checked').value;
    load(true);
  });
  $("scope").addEventListener("change", () => {
    const one = $("scope").value === "user";
    $("scope-user").hidden = !one;
    $("scope-user-label").hidden = !one;
    showUploadPlace();
    if (!one) load(true);
  });
  $("scope-user").addEventListener("input", async () => (people ||= await import("./people.js")).suggest());
  // The same column again turns the order round; another starts A to Z, or largest or newest first.
  for (const sort of ["name", "size", "time"]) {
    $(`sort-${sort}`).addEventListener("click", () => {
      const first = sort === "name" ? "asc" : "desc";
      view.order = view.sort === sort ? (view.order === "desc" ? "asc" : "desc") : first;
      view.sort = sort;
      view.chosen = true;
      load(true);
    });
  }
}
