// Uploads: each file with one progress bar, Cancel and Retry. Up to the API's threshold a file goes as the
// form the API presigns; above it in parts (S3 multipart), which resume after a dropped connection, and
// after a reload or a closed tab when the person chooses the same file again (resume.js). Leaving the page
// while a file is sent asks first. A name already taken asks "replace or keep both" first. Finished
// uploads are asked for until listed, then handed to the list (`listed`, which the wiring passes).

import { api, keyPath, RETRY_LATER, sleep, splitKey } from "./api.js";
import { $, config, downloading, el, formatSize } from "./page.js";
import { session } from "./session.js";
import { forgetUnfinished, isTheFileOf, keepUnfinished, unfinishedUploads } from "./unfinished.js";

// An upload's file is asked for until listed: after 250 ms, then twice as long each time up to 4 s, for
// three minutes at most, as a batch the indexer failed comes back after the queue's timeout (the API's rate
// limit is shared: docs/page.md). It is asked as a list of one's files from its key on (`prefix`, one
// item), which answers 200 with no item until it is indexed: `GET /me/files/{key}` would answer 404, which
// the browser logs as an error in the console at every wait.
const POLL_FIRST_MS = 250;
const POLL_MAX_MS = 4000;
const POLL_DEADLINE_MS = 3 * 60 * 1000;
// Parts: this many at once, URLs asked for this many at a time; a dropped connection is resumed (the parts
// S3 holds asked for again) after 1, 2, 4, 8 and 16 s before the upload is shown as failed.
const PARALLEL_PARTS = 3;
const PART_URLS_AT_ONCE = 12;
const RESUME_WAITS_MS = [1000, 2000, 4000, 8000, 16000];
let listed = () => {};

class Cancelled extends Error {
  constructor() {
    super("Cancelled");
  }
}

// `folderOf(file)`: the folder the file goes to within one's own ("" for the top). A file of an upload in
// parts that an earlier page left unfinished (the same name, size and time) resumes it, whichever picker
// chose it.
export function uploadFiles(files, folderOf = () => "") {
  for (const file of files) {
    const unfinished = unfinishedUploads().find((kept) => isTheFileOf(kept, file) && !ofThisPage.has(kept.uploadId));
    if (unfinished) resumeUpload(file, unfinished);
    else new Upload(file, folderOf(file)).run();
  }
  clearButton().hidden = false;
}

// The uploadIds this page sends (or sent): an upload of its own under way or failed is retried, not resumed
// twice.
const ofThisPage = new Set();

// `kept`, an upload in parts left unfinished, sent on from the parts S3 holds with `file`, the same file.
export function resumeUpload(file, kept) {
  document.querySelector(`#uploads li[data-upload-id="${CSS.escape(kept.uploadId)}"]`)?.remove();
  ofThisPage.add(kept.uploadId);
  const { folder, name } = splitKey(kept.key); // its folder within one's own: where a retry after Cancel goes
  const upload = new Upload(file, folder);
  upload.multipart = kept;
  upload.named(name);
  upload.run();
}

// ---- leaving the page while a file is sent: the browser asks first (its own words).
const sending = new Set();

function warnBeforeLeaving(event) {
  if (downloading) return; // a download of the page's own: the page stays
  event.preventDefault();
  event.returnValue = ""; // what older browsers need to ask
}

function isSending(upload, yes) {
  if (yes) sending.add(upload);
  else sending.delete(upload);
  if (sending.size) window.addEventListener("beforeunload", warnBeforeLeaving);
  else window.removeEventListener("beforeunload", warnBeforeLeaving);
}

class Upload {
  constructor(file, folder) {
    this.file = file;
    this.folder = folder;
    this.onConflict = "ask";
    this.multipart = null; // {key, uploadId, uploadToken, partSize, partCount, size} once started
    this.replacing = null; // the indexed file a "Replace" writes over: the list waits for the new one
    this.requests = new Set(); // the transfers under way, which Cancel stops
    this.name = el("span");
    this.progress = el("progress", { max: 100, value: 0 });
    this.state = el("span", { className: "upload-state", textContent: "Starting…", role: "status" });
    this.cancelButton = el("button", { type: "button", textContent: "Cancel", onclick: () => this.cancel() });
    this.retryButton = el("button", { type: "button", textContent: "Retry", hidden: true, onclick: () => this.run() });
    this.named(file.name);
    this.item = el("li", {}, this.name, this.progress, this.state, this.cancelButton, this.retryButton);
    $("uploads").append(this.item);
  }

  // The name shown and said: the file's, until the API answers the key it really gets ("Keep both" saves
  // "notes.txt" as "notes (1).txt").
  named(name) {
    this.name.textContent = name;
    this.progress.ariaLabel = `Upload of ${name}`;
    this.cancelButton.ariaLabel = `Cancel the upload of ${name}`;
    this.retryButton.ariaLabel = `Retry the upload of ${name}`;
  }

  async run() {
    this.cancelled = false;
    isSending(this, true);
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
        this.named(splitKey(started.key).name);
        if (started.uploadId) {
          ofThisPage.add(started.uploadId);
          this.multipart = started;
          keepUnfinished(started, this.file);
          key = await this.sendParts();
        } else key = await this.sendForm(started);
      }
      isSending(this, false);
      this.cancelButton.hidden = true;
      this.show(100, "Uploaded; indexing…");
      const indexed = await waitUntilIndexed(key, this.replacing);
      this.state.textContent = indexed ? "Done" : "Uploaded; it will appear in the list shortly";
      this.item.classList.add("done");
      if (indexed) listed(indexed);
    } catch (error) {
      isSending(this, false);
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
        const existing = error.body && error.body.existing;
        const choice = await (await import("./conflict.js")).askReplaceOrKeepBoth(this.file, existing);
        if (choice === "replace") this.replacing = existing || {};
        if (choice === "cancel") {
          isSending(this, false);
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
        forgetUnfinished(upload.uploadId);
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
      forgetUnfinished(upload.uploadId);
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

// The file once listed as this upload made it (not the one a "Replace" wrote over: `replacing`, the entry
// that was there); null at the deadline or on an answer that waiting cannot change.
async function waitUntilIndexed(key, replacing = null) {
  const own = session && session.user ? `${session.user}/` : null;
  // One's own key from its start (uploads go under one's own folder); a deployment without the name
  // index, or a key too long for a prefix, is asked for by key instead (400).
  let byList = own !== null && key.startsWith(own);
  // Another upload of the key than the one replaced: its time, contents or size differ.
  const isThisUpload = (item) =>
    Boolean(item) && (!replacing || ["uploadDate", "eTag", "size"].some((field) => item[field] !== replacing[field]));
  const deadline = Date.now() + POLL_DEADLINE_MS;
  for (let wait = POLL_FIRST_MS; Date.now() + wait < deadline; wait = Math.min(wait * 2, POLL_MAX_MS)) {
    await sleep(wait);
    try {
      let item;
      if (byList) {
        // In key order the key itself comes before every longer key it begins: the first item, if listed.
        const query = new URLSearchParams({ prefix: key.slice(own.length), order: "asc", limit: "1" });
        const page = await api(`/me/files?${query}`);
        item = page.items.find((listed) => listed.objectKey === key);
      } else {
        item = await api(`/me/files/${keyPath(key)}`);
      }
      if (isThisUpload(item)) return item;
    } catch (error) {
      if (byList && error.status === 400) {
        byList = false;
        continue;
      }
      // Not listed yet, the service busy or failing a moment, or the network down: the upload itself is done.
      if (![0, 404, ...RETRY_LATER].includes(error.status) && error.status < 500) return null;
    }
  }
  return null;
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

// `folderOf(file)`: folders.js's; `onListed(item)`: the list's, with a file uploaded and listed.
export function wireUploads({ folderOf, onListed }) {
  listed = onListed;
  $("file-input").addEventListener("change", (event) => {
    uploadFiles([...event.target.files], folderOf);
    event.target.value = "";
  });
}
