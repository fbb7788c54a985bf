// Uploads in parts that a reload or a closed tab left unfinished: S3 holds the parts sent (GET
// /me/uploads/parts says which), and the page kept what POST /me/uploads answered (unfinished.js). Each is
// shown with how far it got; choosing the same file again (its name, size and time) sends the rest, and
// "Discard" aborts it. A page cannot read a file it was not given again, so the person chooses it. Loaded
// only when there is one to offer.

import { api, splitKey } from "./api.js";
import { $, el, formatSize } from "./page.js";
import { forgetUnfinished, isTheFileOf } from "./unfinished.js";
import { resumeUpload } from "./uploads.js";

export function offerToResume(unfinished) {
  for (const kept of unfinished) $("uploads").append(offer(kept));
}

function offer(kept) {
  const name = splitKey(kept.key).name;
  const progress = el("progress", { max: 100, value: 0, ariaLabel: `Upload of ${name}` });
  const state = el("span", { className: "upload-state", role: "status", textContent: "Interrupted" });
  const picker = el("input", { type: "file", className: "picker", id: `resume-${kept.uploadId}` });
  // "Resume" is the picker's label (its name says which upload: "Resume the upload of backup.bin").
  const which = el("span", { className: "visually-hidden", textContent: ` the upload of ${name}` });
  const choose = el("label", { htmlFor: picker.id, className: "button" }, "Resume", which);
  const discard = el("button", {
    type: "button",
    className: "danger",
    textContent: "Discard",
    ariaLabel: `Discard the upload of ${name}`,
  });
  const actions = el("span", { className: "resume-actions" }, picker, choose, discard);
  const item = el("li", { className: "interrupted" }, el("span", { textContent: name }), progress, state, actions);
  item.dataset.uploadId = kept.uploadId;

  picker.addEventListener("change", () => {
    const file = picker.files[0];
    picker.value = "";
    if (!file) return;
    if (isTheFileOf(kept, file)) resumeUpload(file, kept);
    else {
      state.textContent =
        `That is another file: choose “${kept.name}” (${formatSize(kept.size)}), as it was when its upload began.`;
    }
  });
  discard.addEventListener("click", async () => {
    discard.disabled = true;
    // S3 drops the parts (and would abort a forgotten upload itself after a week).
    await api("/me/uploads/abort", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ key: kept.key, uploadId: kept.uploadId }),
    }).catch(() => {});
    forgetUnfinished(kept.uploadId);
    item.remove();
  });

  // How far it got: the parts S3 holds.
  const query = new URLSearchParams({ key: kept.key, uploadId: kept.uploadId });
  api(`/me/uploads/parts?${query}`).then(
    ({ parts }) => {
      progress.value = Math.round((parts.reduce((sum, part) => sum + part.size, 0) / kept.size) * 100);
      state.textContent = `Interrupted at ${progress.value}%: choose the same file to resume`;
    },
    (error) => {
      if (error.status === 401 || !item.isConnected) return;
      if (error.status === 0 || error.status >= 500 || error.status === 429) return; // asked again when resumed
      // Completed, aborted or gone: nothing left to resume.
      forgetUnfinished(kept.uploadId);
      item.remove();
    },
  );
  return item;
}
