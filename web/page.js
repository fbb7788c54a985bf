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
