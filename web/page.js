// What every module shares: the deployment's configuration (config.json, which the stack writes, read once
// at start), the page's elements and its words.

export const config = {};

export async function loadConfig() {
  const response = await fetch("config.json", { cache: "no-store" });
  if (!response.ok) throw new Error(`config.json answered ${response.status}`);
  const read = await response.json();
  read.apiUrl = String(read.apiUrl || "").replace(/\/+$/, "");
  Object.assign(config, read);
}

// An element by its id.
export const $ = (id) => document.getElementById(id);

// A new element with these properties and children.
export const el = (tag, properties = {}, ...children) => {
  const element = Object.assign(document.createElement(tag), properties);
  element.append(...children);
  return element;
};

// True while the page follows a download of its own (`followDownload`): the page stays, so leaving it is
// not asked about (the browser's beforeunload comes within the click).
export let downloading = false;

// Follows `href`, an attachment (a presigned download, the zip's service worker), in this tab.
export function followDownload(href) {
  const link = el("a", { href, rel: "noopener", hidden: true });
  document.body.append(link);
  downloading = true;
  try {
    link.click();
  } finally {
    downloading = false;
    link.remove();
  }
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

// The list's error; "Try again" repeats what failed when `retry` is given.
export function failed(message, retry = null) {
  if (!retry && document.activeElement === $("retry")) $("files-title").focus();
  $("retry").onclick = retry;
  $("retry").hidden = !retry;
  $("list-error").textContent = message;
}
