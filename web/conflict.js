// "Replace or keep both", asked when an upload's name is taken (POST /me/uploads answered 409 with the file
// that is there). Loaded at the first such answer.

import { el, formatSize } from "./page.js";

// "Replace or keep both": a modal dialog (WAI-ARIA's dialog pattern: labelled, focus inside, Escape keeps
// the file that is there). Resolves with "replace", "keepBoth" or "cancel".
let asking = Promise.resolve();

export function askReplaceOrKeepBoth(file, existing) {
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
