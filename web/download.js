// A zip of many files (a selection, a folder), made in the page (zip.js) from each file's presigned
// download, fetched one after another, and saved as it is made: through the service worker (sw.js), which
// answers a download of zip/{id}/{name} with the stream, or else the File System Access API. Memory holds
// one chunk of one file and the zip's directory (under 100 bytes a file), whatever the sizes; a zip takes
// at most MAX_ZIP_FILES files. Loaded at the first zip, with zip.js.

import { api, keyPath, splitKey } from "./api.js";
import { $, failed, followDownload, say } from "./page.js";
import { ownFiles, view } from "./query.js";
import { session } from "./session.js";

export const MAX_ZIP_FILES = 10000;
// While a zip is saved the page tells the service worker now and then, which keeps it from being stopped.
const KEEP_ALIVE_MS = 20 * 1000;

// A name in the zip: the file's path within the folder shown (or within one's own, everywhere).
function pathInZip(key, base) {
  const { name } = splitKey(key);
  const own = session && session.user ? `${session.user}/` : "";
  const relative = key.startsWith(own) ? key.slice(own.length) : key;
  return base && relative.startsWith(base) ? relative.slice(base.length) : relative || name;
}

async function workerForZips() {
  if (!("serviceWorker" in navigator)) return null;
  const registration = await navigator.serviceWorker.register("sw.js", { scope: "zip/" });
  const worker = registration.active || registration.waiting || registration.installing;
  if (worker.state !== "activated") {
    await new Promise((resolve, reject) => {
      worker.addEventListener("statechange", () => {
        if (worker.state === "activated") resolve();
        if (worker.state === "redundant") reject(new Error("the page's download helper could not start"));
      });
    });
  }
  return registration.active;
}

// Feeds `stream` to the service worker a chunk at a time, as the download reads it.
function saveThroughWorker(worker, name, stream, size, onChunk) {
  const reader = stream.getReader();
  const channel = new MessageChannel();
  const id = crypto.randomUUID();
  const port = channel.port1;
  const keepAlive = setInterval(() => worker.postMessage({ type: "keep-alive" }), KEEP_ALIVE_MS);
  const done = new Promise((resolve, reject) => {
    port.onmessage = async ({ data }) => {
      if (data.type === "ready") {
        // A navigation, not <a download> (Chromium fetches those past the worker); the attachment it
        // answers leaves the page as it is.
        followDownload(`zip/${id}/${encodeURIComponent(name)}`);
      } else if (data.type === "pull") {
        try {
          const { value, done: ended } = await reader.read();
          if (ended) {
            port.postMessage({ type: "done" });
            resolve();
            return;
          }
          onChunk(value.length);
          const chunk = value.byteOffset === 0 && value.byteLength === value.buffer.byteLength ? value : value.slice();
          port.postMessage({ type: "chunk", chunk: chunk.buffer }, [chunk.buffer]);
        } catch (error) {
          port.postMessage({ type: "error", message: error.message });
          reject(error);
        }
      } else if (data.type === "cancel") {
        reader.cancel().catch(() => {});
        reject(new Error("the download was cancelled"));
      }
    };
  });
  worker.postMessage({ type: "zip", id, name, size }, [channel.port2]);
  return done.finally(() => clearInterval(keepAlive));
}

// `files`: [{key, path, size, date}]. The save picker is asked first: it needs the click's activation.
async function saveZip(name, files) {
  const picker = !("serviceWorker" in navigator) && window.showSaveFilePicker;
  const handle = picker ? await window.showSaveFilePicker({ suggestedName: name }) : null;
  if (!picker && !("serviceWorker" in navigator)) {
    throw new Error("this browser cannot save a zip as it is made; download the files one by one");
  }
  let opened = 0;
  const open = async (entry) => {
    opened += 1;
    $("zip-progress").textContent = `Zipping file ${opened} of ${files.length}…`;
    const { url } = await api(`/me/download/${keyPath(entry.key)}`, { headers: { Accept: "application/json" } });
    const response = await fetch(url);
    if (!response.ok || !response.body) throw new Error(`storage answered ${response.status} for ${entry.name}`);
    return response.body;
  };
  const entries = files.map((file) => ({ name: file.path, size: file.size, date: new Date(file.date), key: file.key }));
  const { zipStream } = await import("./zip.js"); // the ZIP writer, loaded at the first zip
  const { stream, size } = zipStream(entries, open);
  if (handle) {
    await stream.pipeTo(await handle.createWritable());
  } else {
    // The first bytes handed to the worker are the first bytes of the download (the bench reads the mark).
    let first = true;
    const onChunk = () => {
      if (first) performance.mark("zip:first-byte");
      first = false;
    };
    await saveThroughWorker(await workerForZips(), name, stream, size, onChunk);
  }
}

async function zipDownload(name, files) {
  failed("");
  if (!files.length) return;
  if (files.length > MAX_ZIP_FILES) {
    failed(`A zip takes at most ${MAX_ZIP_FILES} files; this one would have ${files.length}.`);
    return;
  }
  $("zip-progress").textContent = `Zipping ${files.length} file${files.length === 1 ? "" : "s"}…`;
  try {
    await saveZip(name, files);
    $("zip-progress").textContent = "";
    say(`${name} is saved (${files.length} file${files.length === 1 ? "" : "s"}).`);
  } catch (error) {
    $("zip-progress").textContent = "";
    if (error.name === "AbortError") return; // the save picker was closed
    if (error.status !== 401) failed(`The zip could not be made: ${error.message}`, () => zipDownload(name, files));
  }
}

const zipName = (folder) => `${folder.replace(/\/$/, "").split("/").pop() || "files"}.zip`;

// `items`, files of the list (a selection), as one zip: their paths within the folder shown.
export function downloadItems(items) {
  const base = ownFiles() && view.where === "folder" ? view.folder : "";
  const files = items.map((item) => ({
    key: item.objectKey,
    path: pathInZip(item.objectKey, base),
    size: item.size,
    date: item.uploadDate,
  }));
  zipDownload(zipName(base), files);
}

// Every file under a folder of one's own (its sub-folders' too), at most MAX_ZIP_FILES + 1 of them.
export async function downloadFolder(prefix) {
  const base = prefix.replace(/[^/]*\/$/, "");
  const files = [];
  const params = new URLSearchParams({ prefix, limit: "1000" });
  try {
    let cursor = null;
    do {
      if (cursor) params.set("cursor", cursor);
      const page = await api(`/me/files?${params}`);
      for (const item of page.items) {
        files.push({ key: item.objectKey, path: pathInZip(item.objectKey, base), size: item.size, date: item.uploadDate });
      }
      cursor = page.nextCursor;
    } while (cursor && files.length <= MAX_ZIP_FILES);
  } catch (error) {
    if (error.status !== 401) failed(`The folder could not be read: ${error.message}`, () => downloadFolder(prefix));
    return;
  }
  zipDownload(zipName(prefix), files);
}
