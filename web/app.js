// S3 File Search's page: sign in at the stack's Cognito user pool, then list, find, upload, download and
// delete one's own files through the API's /me/... routes. No library, no build step.
// Tokens live in sessionStorage (gone with the tab); the password goes to Cognito only. The ID token is
// refreshed before it expires; sign-out forgets every token.

const SESSION_KEY = "s3-file-search.session";
const REFRESH_MARGIN_MS = 5 * 60 * 1000;
const PAGE_SIZE = 50;
// Sorting by size reads a person's whole list (the API orders it by time): at most this many files.
const SIZE_SORT_LIMIT = 5000;
// An upload's file is asked for until listed: after 250 ms, then twice as long each time up to 4 s, for a
// minute at most (the API's rate limit is shared: README, "The page").
const POLL_FIRST_MS = 250;
const POLL_MAX_MS = 4000;
const POLL_DEADLINE_MS = 60 * 1000;
// "Retry later" (429: the API's rate limit; 503: the table is busy): asked again this many times.
const RETRY_LATER = [429, 503];
const RETRY_LATER_TRIES = 3;
const MAX_SIZE = 2n ** 63n - 1n;

const $ = (id) => document.getElementById(id);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
// A new element with these properties and children.
const el = (tag, properties = {}, ...children) => {
  const element = Object.assign(document.createElement(tag), properties);
  element.append(...children);
  return element;
};
let config = null;
let session = null;
let refreshTimer = null;
let pendingChallenge = null;
// The list shown: its query, the keys already on screen (nothing twice), and the cursor of the next page.
let view = { sort: "time", order: "desc", cursor: null, keys: new Set(), items: [], generation: 0 };

// ---- Cognito

class CognitoError extends Error {
  constructor(type, message) {
    super(message);
    this.type = type;
  }
}

async function cognito(action, body) {
  const endpoint = config.cognitoEndpoint || `https://cognito-idp.${config.region}.amazonaws.com/`;
  let response;
  try {
    response = await fetch(endpoint, {
      method: "POST",
      headers: {
        "Content-Type": "application/x-amz-json-1.1",
        "X-Amz-Target": `AWSCognitoIdentityProviderService.${action}`,
      },
      body: JSON.stringify(body),
    });
  } catch {
    throw new CognitoError("Network", "The sign-in service cannot be reached. Check your connection.");
  }
  const answer = await response.json().catch(() => ({}));
  if (!response.ok) {
    const type = String(answer.__type || "").split("#").pop();
    throw new CognitoError(type, answer.message || "Sign-in failed.");
  }
  return answer;
}

function claimsOf(token) {
  const payload = token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
  const binary = atob(payload.padEnd(payload.length + ((4 - (payload.length % 4)) % 4), "="));
  return JSON.parse(new TextDecoder().decode(Uint8Array.from(binary, (c) => c.charCodeAt(0))));
}

function keepSession(result, username) {
  const idToken = result.IdToken;
  const claims = claimsOf(idToken);
  session = {
    idToken,
    refreshToken: result.RefreshToken || (session && session.refreshToken),
    expiresAt: claims.exp * 1000,
    username: claims["cognito:username"] || username,
    // The claim the API names a person's files by (their uploadUser).
    user: claims[config.userClaim || "sub"],
    groups: [].concat(claims["cognito:groups"] || []),
  };
  sessionStorage.setItem(SESSION_KEY, JSON.stringify(session));
  scheduleRefresh();
}

function scheduleRefresh() {
  clearTimeout(refreshTimer);
  if (!session || !session.refreshToken) return;
  const wait = Math.max(session.expiresAt - Date.now() - REFRESH_MARGIN_MS, 1000);
  refreshTimer = setTimeout(() => refresh().catch(() => expireSession()), wait);
}

async function refresh() {
  if (!session || !session.refreshToken) throw new Error("no refresh token");
  const answer = await cognito("InitiateAuth", {
    AuthFlow: "REFRESH_TOKEN_AUTH",
    ClientId: config.userPoolClientId,
    AuthParameters: { REFRESH_TOKEN: session.refreshToken },
  });
  keepSession(answer.AuthenticationResult, session.username);
}

function forgetSession() {
  clearTimeout(refreshTimer);
  session = null;
  sessionStorage.removeItem(SESSION_KEY);
}

function expireSession() {
  forgetSession();
  showSignIn("Your session has expired. Please sign in again.");
}

async function signIn(username, password) {
  const answer = await cognito("InitiateAuth", {
    AuthFlow: "USER_PASSWORD_AUTH",
    ClientId: config.userPoolClientId,
    AuthParameters: { USERNAME: username, PASSWORD: password },
  });
  await finishSignIn(answer, username);
}

async function finishSignIn(answer, username) {
  if (answer.AuthenticationResult) {
    pendingChallenge = null;
    keepSession(answer.AuthenticationResult, username);
    showFiles();
    $("files-title").focus();
    return;
  }
  pendingChallenge = { name: answer.ChallengeName, session: answer.Session, username };
  $("sign-in-form").hidden = true;
  if (answer.ChallengeName === "NEW_PASSWORD_REQUIRED") {
    $("new-password-form").hidden = false;
    $("new-password").focus();
  } else if (answer.ChallengeName === "SOFTWARE_TOKEN_MFA") {
    $("mfa-form").hidden = false;
    $("mfa-code").focus();
  } else {
    throw new CognitoError("Challenge", `This page cannot answer the sign-in step ${answer.ChallengeName}.`);
  }
}

async function answerChallenge(responses) {
  const challenge = pendingChallenge;
  const answer = await cognito("RespondToAuthChallenge", {
    ChallengeName: challenge.name,
    ClientId: config.userPoolClientId,
    Session: challenge.session,
    ChallengeResponses: { USERNAME: challenge.username, ...responses },
  });
  $("new-password-form").hidden = true;
  $("mfa-form").hidden = true;
  $("sign-in-form").hidden = false;
  await finishSignIn(answer, challenge.username);
}

function signInMessage(error) {
  if (error.type === "NotAuthorizedException" || error.type === "UserNotFoundException") {
    return "Wrong user name or password.";
  }
  if (error.type === "PasswordResetRequiredException") return "Your password must be reset: ask an administrator.";
  if (error.type === "InvalidPasswordException") return error.message;
  if (error.type === "CodeMismatchException") return "That code is not right. Try again.";
  return error.message || "Sign-in failed.";
}

// ---- the API

class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

async function api(path, options = {}, retried = false, attempt = 0) {
  if (session && session.expiresAt - Date.now() < 30 * 1000) {
    await refresh().catch(() => {});
  }
  if (!session) throw new ApiError(401, "not signed in");
  let response;
  try {
    response = await fetch(`${config.apiUrl}${path}`, {
      ...options,
      headers: { ...(options.headers || {}), Authorization: session.idToken },
    });
  } catch {
    throw new ApiError(0, "The file service cannot be reached. Check your connection and try again.");
  }
  if (RETRY_LATER.includes(response.status) && attempt < RETRY_LATER_TRIES) {
    await sleep(retryAfterMs(response, POLL_FIRST_MS * 2 ** attempt));
    return api(path, options, retried, attempt + 1);
  }
  if (response.status === 401) {
    if (!retried && session.refreshToken) {
      try {
        await refresh();
        return api(path, options, true);
      } catch {
        /* the refresh token is no good either */
      }
    }
    expireSession();
    throw new ApiError(401, "Your session has expired. Please sign in again.");
  }
  if (response.status === 204) return null;
  const body = await response.json().catch(() => null);
  if (!response.ok) {
    throw new ApiError(response.status, (body && body.message) || `The file service answered ${response.status}.`);
  }
  return body;
}

// The wait a 429 or 503 asks for (Retry-After, when the page may read it), at most 10 s.
function retryAfterMs(response, otherwise) {
  const seconds = parseInt(response.headers.get("Retry-After"), 10);
  return seconds >= 0 ? Math.min(seconds * 1000, 10000) : otherwise;
}

const keyPath = (key) => encodeURIComponent(key);

// ---- the list

function formatSize(bytes) {
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

function isAdmin() {
  return Boolean(session && config.adminGroup && session.groups.includes(config.adminGroup));
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

async function loadList(reset) {
  const problems = filterProblems();
  markFields(problems);
  if (problems.length) return;
  const generation = reset ? ++view.generation : view.generation;
  if (reset) {
    view.cursor = null;
    view.keys = new Set();
    view.items = [];
    $("rows").replaceChildren();
  }
  failed("");
  $("more").disabled = true;
  $("files-title").textContent = scopeLabel();
  try {
    if (view.sort === "size") {
      await loadEverything(generation);
    } else {
      const params = listQuery();
      params.set("order", view.order);
      // A person's list is by upload time; the bucket's is asked for it (its time index).
      if (params.has("bucket") && !params.has("q")) params.set("sort", "uploadDate");
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

// ---- uploads

function uploadFiles(files) {
  for (const file of files) uploadFile(file);
}

async function uploadFile(file) {
  const progress = el("progress", { max: 100, value: 0, ariaLabel: `Upload of ${file.name}` });
  const state = el("span", { className: "upload-state", textContent: "Starting…" });
  const item = el("li", {}, el("span", { textContent: file.name }), progress, state);
  $("uploads").append(item);
  try {
    if (config.maxUploadBytes && file.size > config.maxUploadBytes) {
      throw new Error(`it is larger than the limit of ${formatSize(config.maxUploadBytes)}`);
    }
    const form = await api("/me/uploads", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ name: file.name, contentType: file.type || "application/octet-stream", size: file.size }),
    });
    await postForm(form, file, (fraction) => {
      progress.value = Math.round(fraction * 100);
      state.textContent = `${progress.value}%`;
    });
    progress.value = 100;
    state.textContent = "Uploaded; indexing…";
    const indexed = await waitUntilIndexed(form.key);
    state.textContent = indexed ? "Done" : "Uploaded; it will appear in the list shortly";
    item.classList.add("done");
    if (indexed) showNewFile(indexed);
  } catch (error) {
    state.textContent = `Failed: ${error.message}`;
    item.classList.add("failed");
  }
}

function postForm(form, file, onProgress) {
  return new Promise((resolve, reject) => {
    const data = new FormData();
    for (const [name, value] of Object.entries(form.fields)) data.append(name, value);
    data.append("file", file);
    const request = new XMLHttpRequest();
    request.open("POST", form.url);
    request.upload.addEventListener("progress", (event) => {
      if (event.lengthComputable) onProgress(event.loaded / event.total);
    });
    request.addEventListener("load", () => {
      if (request.status >= 200 && request.status < 300) resolve();
      else reject(new Error(`storage answered ${request.status}`));
    });
    request.addEventListener("error", () => reject(new Error("the upload was interrupted")));
    request.send(data);
  });
}

// The file once listed; null at the deadline or on an answer that waiting cannot change.
async function waitUntilIndexed(key) {
  const deadline = Date.now() + POLL_DEADLINE_MS;
  for (let wait = POLL_FIRST_MS; Date.now() + wait < deadline; wait = Math.min(wait * 2, POLL_MAX_MS)) {
    await sleep(wait);
    try {
      return await api(`/me/files/${keyPath(key)}`);
    } catch (error) {
      // Not listed yet, still busy, or the network down a moment: the upload itself is done.
      if (![0, 404, ...RETRY_LATER].includes(error.status)) return null;
    }
  }
  return null;
}

function showNewFile(item) {
  // A new file is the newest: it heads a newest-first list; any other order is read again.
  if (view.sort === "time" && view.order === "desc" && !view.keys.has(item.objectKey)) {
    view.keys.add(item.objectKey);
    view.items.unshift(item);
    $("rows").prepend(row(item));
    renderState();
  } else {
    loadList(true);
  }
}

// ---- views

function showSignIn(message = "", status = "") {
  $("loading").hidden = true;
  $("files-view").hidden = true;
  $("account").hidden = true;
  $("sign-in-view").hidden = false;
  $("sign-in-form").hidden = false;
  $("new-password-form").hidden = true;
  $("mfa-form").hidden = true;
  $("password").value = "";
  $("sign-in-error").textContent = message;
  $("sign-in-status").textContent = status;
  $("username").focus();
}

function showFiles() {
  $("loading").hidden = true;
  $("sign-in-view").hidden = true;
  $("sign-in-error").textContent = "";
  $("files-view").hidden = false;
  $("account").hidden = false;
  $("who").textContent = session.username;
  $("scope-fields").hidden = !isAdmin();
  $("uploads").replaceChildren();
  loadList(true);
}

function wire() {
  $("sign-in-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const username = $("username").value.trim();
    const password = $("password").value;
    if (!username || !password) {
      $("sign-in-error").textContent = "Enter your user name and password.";
      return;
    }
    $("sign-in-button").disabled = true;
    $("sign-in-error").textContent = "";
    $("sign-in-status").textContent = "";
    try {
      await signIn(username, password);
    } catch (error) {
      $("sign-in-error").textContent = signInMessage(error);
      $("password").value = "";
      $("password").focus();
    } finally {
      $("sign-in-button").disabled = false;
    }
  });
  $("new-password-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      await answerChallenge({ NEW_PASSWORD: $("new-password").value });
    } catch (error) {
      $("sign-in-error").textContent = signInMessage(error);
    } finally {
      $("new-password").value = "";
    }
  });
  $("mfa-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      await answerChallenge({ SOFTWARE_TOKEN_MFA_CODE: $("mfa-code").value.trim() });
    } catch (error) {
      $("sign-in-error").textContent = signInMessage(error);
    }
  });
  $("sign-out").addEventListener("click", () => {
    const token = session && session.refreshToken;
    forgetSession();
    if (token) cognito("RevokeToken", { Token: token, ClientId: config.userPoolClientId }).catch(() => {});
    showSignIn("", "You are signed out.");
  });
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
  $("file-input").addEventListener("change", (event) => {
    uploadFiles([...event.target.files]);
    event.target.value = "";
  });
  const zone = $("drop-zone");
  zone.addEventListener("dragover", (event) => {
    event.preventDefault();
    zone.classList.add("over");
  });
  zone.addEventListener("dragleave", () => zone.classList.remove("over"));
  zone.addEventListener("drop", (event) => {
    event.preventDefault();
    zone.classList.remove("over");
    uploadFiles([...event.dataTransfer.files]);
  });
}

async function start() {
  wire();
  try {
    const response = await fetch("config.json", { cache: "no-store" });
    if (!response.ok) throw new Error(`config.json answered ${response.status}`);
    config = await response.json();
    config.apiUrl = String(config.apiUrl || "").replace(/\/+$/, "");
  } catch (error) {
    $("loading").textContent = `This page is not configured (${error.message}). Ask the person who deployed it.`;
    return;
  }
  const kept = sessionStorage.getItem(SESSION_KEY);
  if (kept) {
    try {
      session = JSON.parse(kept);
    } catch {
      session = null;
    }
  }
  if (session && session.expiresAt > Date.now()) {
    scheduleRefresh();
    showFiles();
  } else if (session) {
    try {
      await refresh();
      showFiles();
    } catch {
      expireSession();
    }
  } else {
    showSignIn();
  }
}

start();
