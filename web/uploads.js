// Uploads: each file goes to S3 as the form the API presigns, with its progress, then is asked for until listed.

import { api, keyPath, RETRY_LATER, sleep } from "./api.js";
import { formatSize, showNewFile } from "./list.js";
import { $, config, el } from "./page.js";

// An upload's file is asked for until listed: after 250 ms, then twice as long each time up to 4 s, for a
// minute at most (the API's rate limit is shared: docs/page.md).
const POLL_FIRST_MS = 250;
const POLL_MAX_MS = 4000;
const POLL_DEADLINE_MS = 60 * 1000;

export function uploadFiles(files, folderOf = () => "") {
  for (const file of files) uploadFile(file, folderOf(file));
}

async function uploadFile(file, folder = "") {
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

// The file picker and the drop zone.
export function wireUploads({ folderOf = () => "", filesOfDrop = async (data) => [...data.files] } = {}) {
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
