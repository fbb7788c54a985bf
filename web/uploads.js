// Uploads: each file with one progress bar, Cancel and Retry. Up to the API's threshold a file goes as the
// form the API presigns; above it in parts (S3 multipart), which resume after a dropped connection. A name
// already taken asks "replace or keep both" first. Finished uploads are asked for until listed, and join
// the list on screen only if they belong to it.

import { api, keyPath, RETRY_LATER, sleep } from "./api.js";
import { formatSize, loadList, ownFiles, showNewFile } from "./list.js";
import { $, config, el } from "./page.js";

// An upload's file is asked for until listed: after 250 ms, then twice as long each time up to 4 s, for
// three minutes at most, as a batch the indexer failed comes back after the queue's timeout (the API's rate
// limit is shared: docs/page.md).
const POLL_FIRST_MS = 250;
const POLL_MAX_MS = 4000;
const POLL_DEADLINE_MS = 3 * 60 * 1000;
// Parts: this many at once, URLs asked for this many at a time; a dropped connection is resumed (the parts
// S3 holds asked for again) after 1, 2, 4, 8 and 16 s before the upload is shown as failed.
const PARALLEL_PARTS = 3;
const PART_URLS_AT_ONCE = 12;
const RESUME_WAITS_MS = [1000, 2000, 4000, 8000, 16000];
// The filters whose lists the page cannot tell a new file's place in: the API is asked again instead.
const FILTER_FIELDS = ["q", "ext", "from", "to", "min-size", "max-size"];

class Cancelled extends Error {
  constructor() {
    super("Cancelled");
  }
}

// `folderOf(file)`: the folder the file goes to within one's own ("" for the top).
export function uploadFiles(files, folderOf = () => "") {
  for (const file of files) new Upload(file, folderOf(file)).run();
  clearButton().hidden = false;
}

class Upload {
  constructor(file, folder) {
    this.file = file;
    this.folder = folder;
    this.onConflict = "ask";
    this.multipart = null; // {key, uploadId, uploadToken, partSize, partCount, size} once started
    this.requests = new Set(); // the transfers under way, which Cancel stops
    this.progress = el("progress", { max: 100, value: 0, ariaLabel: `Upload of ${file.name}` });
    this.state = el("span", { className: "upload-state", textContent: "Starting…", role: "status" });
    this.cancelButton = el("button", {
      type: "button",
      textContent: "Cancel",
      ariaLabel: `Cancel the upload of ${file.name}`,
      onclick: () => this.cancel(),
    });
    this.retryButton = el("button", {
      type: "button",
      textContent: "Retry",
      ariaLabel: `Retry the upload of ${file.name}`,
      hidden: true,
      onclick: () => this.run(),
    });
    this.item = el(
      "li",
      {},
      el("span", { textContent: file.name }),
      this.progress,
      this.state,
      this.cancelButton,
      this.retryButton,
    );
    $("uploads").append(this.item);
  }

  async run() {
    this.cancelled = false;
    this.item.classList.remove("failed", "cancelled", "done");
    this.cancelButton.hidden = false;
    this.retryButton.hidden = true;
    try {
      if (config.maxUploadBytes && this.file.size > config.maxUploadBytes) {
        throw new Error(`it is larger than the limit of ${formatSize(config.maxUploadBytes)}`);
      }
      let key;
      if (this.multipart) {
        key = await this.sendParts(); // a retry resumes the upload it had started
      } else {
        const started = await this.start();
        if (!started) return; // the person chose not to upload it
        key = started.uploadId ? ((this.multipart = started), await this.sendParts()) : await this.sendForm(started);
      }
      this.cancelButton.hidden = true;
      this.show(100, "Uploaded; indexing…");
      const indexed = await waitUntilIndexed(key);
      this.state.textContent = indexed ? "Done" : "Uploaded; it will appear in the list shortly";
      this.item.classList.add("done");
      if (indexed) showOnList(indexed);
    } catch (error) {
      this.cancelButton.hidden = true;
      this.retryButton.hidden = false;
      if (error instanceof Cancelled) {
        this.state.textContent = "Cancelled";
        this.item.classList.add("cancelled");
      } else {
        this.state.textContent = `Failed: ${error.message}`;
        this.item.classList.add("failed");
      }
    }
  }

  // The API's answer to the upload (a form, or a multipart upload), after asking the person what to do
  // with a name already taken; null if they keep the file that is there.
  async start() {
    for (;;) {
      this.throwIfCancelled();
      try {
        return await api("/me/uploads", {
          method: "POST",
          headers: { "Content-Type": "application/json" },
          body: JSON.stringify({
            name: this.file.name,
            contentType: this.file.type || "application/octet-stream",
            size: this.file.size,
            onConflict: this.onConflict,
            ...(this.folder ? { folder: this.folder } : {}),
          }),
        });
      } catch (error) {
        if (error.status !== 409 || this.onConflict !== "ask") throw error;
        const choice = await askReplaceOrKeepBoth(this.file, error.body && error.body.existing);
        if (choice === "cancel") {
          this.cancelButton.hidden = true;
          this.retryButton.hidden = false;
          this.state.textContent = "Not uploaded: the file there is kept";
          this.item.classList.add("cancelled");
          return null;
        }
        this.onConflict = choice;
      }
    }
  }

  async sendForm(form) {
    await this.transfer("POST", form.url, formData(form, this.file), (loaded, total) =>
      this.show((loaded / total) * 100),
    );
    return form.key;
  }

  // Every part S3 does not hold yet, a few at a time; a dropped connection resumes from the parts S3 holds.
  async sendParts() {
    const upload = this.multipart;
    for (let attempt = 0; ; attempt++) {
      try {
        const held = await api(`/me/uploads/parts?key=${encodeURIComponent(upload.key)}&uploadId=${encodeURIComponent(upload.uploadId)}`);
        const done = new Map(held.parts.map((part) => [part.partNumber, part.size]));
        const loaded = new Map(done);
        const update = () => this.show(([...loaded.values()].reduce((a, b) => a + b, 0) / upload.size) * 100);
        update();
        const missing = [];
        for (let number = 1; number <= upload.partCount; number++) if (!done.has(number)) missing.push(number);
        for (let at = 0; at < missing.length; at += PART_URLS_AT_ONCE) {
          const numbers = missing.slice(at, at + PART_URLS_AT_ONCE);
          const { parts } = await api("/me/uploads/parts", {
            method: "POST",
            headers: { "Content-Type": "application/json" },
            body: JSON.stringify({ ...ticket(upload), partNumbers: numbers }),
          });
          await inParallel(parts, PARALLEL_PARTS, async (part) => {
            const start = (part.partNumber - 1) * upload.partSize;
            const body = this.file.slice(start, start + part.size);
            await this.transfer("PUT", part.url, body, (sent) => {
              loaded.set(part.partNumber, sent);
              update();
            });
            loaded.set(part.partNumber, part.size);
            update();
          });
        }
        await api("/me/uploads/complete", {
          method: "POST",
          headers: { "Content-Type": "application/json" },
          body: JSON.stringify(ticket(upload)),
        });
        this.multipart = null;
        return upload.key;
      } catch (error) {
        // A dropped connection (status 0): wait, then ask S3 which parts it holds and send the rest.
        if (error instanceof Cancelled || error.status !== 0 || attempt >= RESUME_WAITS_MS.length) throw error;
        this.state.textContent = "Connection lost; resuming…";
        await sleep(RESUME_WAITS_MS[attempt]);
        this.throwIfCancelled();
      }
    }
  }

  // One request to S3 with its upload progress; rejects with status 0 when the connection drops.
  transfer(method, url, body, onProgress) {
    this.throwIfCancelled();
    return new Promise((resolve, reject) => {
      const request = new XMLHttpRequest();
      this.requests.add(request);
      const finish = (settle) => {
        this.requests.delete(request);
        settle();
      };
      request.open(method, url);
      request.upload.addEventListener("progress", (event) => {
        if (event.lengthComputable) onProgress(event.loaded, event.total);
      });
      request.addEventListener("load", () =>
        finish(() => {
          if (request.status >= 200 && request.status < 300) resolve();
          else reject(Object.assign(new Error(`storage answered ${request.status}`), { status: request.status }));
        }),
      );
      request.addEventListener("error", () =>
        finish(() => reject(Object.assign(new Error("the upload was interrupted"), { status: 0 }))),
      );
      request.addEventListener("abort", () => finish(() => reject(new Cancelled())));
      request.send(body);
    });
  }

  async cancel() {
    this.cancelled = true;
    this.cancelButton.hidden = true;
    for (const request of [...this.requests]) request.abort();
    const upload = this.multipart;
    this.multipart = null; // a retry starts afresh
    if (upload) {
      // S3 drops the parts it holds (and would abort a forgotten upload itself after a week).
      await api("/me/uploads/abort", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ key: upload.key, uploadId: upload.uploadId }),
      }).catch(() => {});
    }
  }

  throwIfCancelled() {
    if (this.cancelled) throw new Cancelled();
  }

  show(percent, words = null) {
    this.progress.value = Math.min(100, Math.round(percent));
    this.state.textContent = words || `${this.progress.value}%`;
  }
}

const ticket = (upload) => ({ key: upload.key, uploadId: upload.uploadId, uploadToken: upload.uploadToken });

function formData(form, file) {
  const data = new FormData();
  for (const [name, value] of Object.entries(form.fields)) data.append(name, value);
  data.append("file", file);
  return data;
}

async function inParallel(items, width, work) {
  const queue = [...items];
  const worker = async () => {
    while (queue.length) await work(queue.shift());
  };
  await Promise.all(Array.from({ length: Math.min(width, queue.length) }, worker));
}

// The file once listed; null at the deadline or on an answer that waiting cannot change.
async function waitUntilIndexed(key) {
  const deadline = Date.now() + POLL_DEADLINE_MS;
  for (let wait = POLL_FIRST_MS; Date.now() + wait < deadline; wait = Math.min(wait * 2, POLL_MAX_MS)) {
    await sleep(wait);
    try {
      return await api(`/me/files/${keyPath(key)}`);
    } catch (error) {
      // Not listed yet, the service busy or failing a moment, or the network down: the upload itself is done.
      if (![0, 404, ...RETRY_LATER].includes(error.status) && error.status < 500) return null;
    }
  }
  return null;
}

// A file just uploaded joins the list on screen only if it belongs there: one's own files in the folder
// shown, never another person's files an admin is looking at. A filtered list (name words, type, dates,
// sizes) and an admin's whole bucket are asked for again once the uploads of the moment are listed: the API
// says what belongs.
let listAgain = null;

function showOnList(item) {
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

// "Replace or keep both": a modal dialog (WAI-ARIA's dialog pattern: labelled, focus inside, Escape keeps
// the file that is there). Resolves with "replace", "keepBoth" or "cancel".
let asking = Promise.resolve();

function askReplaceOrKeepBoth(file, existing) {
  // One question at a time, in the order the files were chosen.
  const answer = asking.then(() => ask(file, existing));
  asking = answer.catch(() => {});
  return answer;
}

function ask(file, existing) {
  return new Promise((resolve) => {
    const title = el("h2", { id: "conflict-title", textContent: `"${file.name}" already exists` });
    const when = existing && existing.uploadDate ? `, uploaded ${new Date(existing.uploadDate).toLocaleString()}` : "";
    const size = existing && existing.size !== undefined ? formatSize(Number(existing.size)) : "";
    const text = el("p", {
      id: "conflict-text",
      textContent:
        `Your files have "${file.name}" already (${size}${when}). Replace it with the one you chose ` +
        `(${formatSize(file.size)}), or keep both: the new one is saved under a numbered name.`,
    });
    const dialog = el("dialog", { className: "conflict" }, title, text);
    dialog.setAttribute("aria-labelledby", "conflict-title");
    dialog.setAttribute("aria-describedby", "conflict-text");
    const close = (choice) => {
      dialog.close();
      dialog.remove();
      resolve(choice);
    };
    const choices = el(
      "div",
      { className: "conflict-choices" },
      el("button", { type: "button", textContent: "Replace", onclick: () => close("replace") }),
      el("button", { type: "button", textContent: "Keep both", onclick: () => close("keepBoth") }),
      el("button", { type: "button", textContent: "Don't upload", onclick: () => close("cancel") }),
    );
    dialog.append(choices);
    dialog.addEventListener("cancel", (event) => {
      event.preventDefault();
      close("cancel");
    });
    document.body.append(dialog);
    dialog.showModal();
    choices.children[1].focus(); // the choice that loses nothing
  });
}

// "Clear finished": the uploads done, cancelled or failed leave the list; those under way stay.
function clearButton() {
  let button = $("clear-uploads");
  if (!button) {
    button = el("button", {
      type: "button",
      id: "clear-uploads",
      textContent: "Clear finished",
      hidden: true,
      onclick: () => {
        for (const item of [...$("uploads").children]) {
          if (item.matches(".done, .failed, .cancelled")) item.remove();
        }
        button.hidden = $("uploads").children.length === 0;
      },
    });
    $("uploads").after(button);
  }
  return button;
}

// The file picker and the drop zone; `folderOf` and `filesOfDrop` (a promise of a drop's files) are the
// folders' (folders.js).
export function wireUploads({ folderOf = () => "", filesOfDrop = async (data) => [...data.files] } = {}) {
  $("file-input").addEventListener("change", (event) => {
    uploadFiles([...event.target.files], folderOf);
    event.target.value = "";
  });
  const zone = $("drop-zone");
  zone.addEventListener("dragover", (event) => {
    event.preventDefault();
    zone.classList.add("over");
  });
  zone.addEventListener("dragleave", () => zone.classList.remove("over"));
  zone.addEventListener("drop", async (event) => {
    event.preventDefault();
    zone.classList.remove("over");
    uploadFiles(await filesOfDrop(event.dataTransfer), folderOf);
  });
}
