// What every module shares: the deployment's configuration (config.json, which the stack writes, read once
// at start) and the page's elements.

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
