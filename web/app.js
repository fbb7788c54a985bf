// S3 File Search's page: sign in, then browse, find, upload, download (one file or a zip of many) and delete
// one's own files through the API's /me/... routes. No library, no build step: this entry wires the modules
// (index.html preloads them) and hands each what it calls of a module above it.

import { uploadFolderOf, wireFolders } from "./folders.js";
import { loadList, openFolder, renderState, showUploaded, wireList } from "./list.js";
import { $, forgetNotice, loadConfig } from "./page.js";
import { wireSelection } from "./selection.js";
import { isAdmin, resumeSession, session, wireSignIn } from "./session.js";
import { forgetUnfinished, unfinishedUploads } from "./unfinished.js";
import { uploadFiles, wireUploads } from "./uploads.js";

function showFiles() {
  $("loading").hidden = true;
  $("sign-in-view").hidden = true;
  $("sign-in-error").textContent = "";
  $("files-view").hidden = false;
  $("account").hidden = false;
  $("who").textContent = session.username;
  $("scope-fields").hidden = !isAdmin();
  $("uploads").replaceChildren();
  forgetNotice();
  loadList(true);
  // Uploads in parts a reload or a closed tab left: offered to resume (resume.js, loaded only then).
  const unfinished = unfinishedUploads();
  if (unfinished.length) import("./resume.js").then((resume) => resume.offerToResume(unfinished));
}

async function start() {
  wireSignIn(showFiles, (step) => import("./password.js").then((module) => module[step]()));
  // What the page last said, and the uploads it could resume, were the person's signing out: they go too.
  $("sign-out").addEventListener("click", () => {
    forgetNotice();
    forgetUnfinished();
  });
  wireList();
  wireFolders({ open: openFolder, upload: uploadFiles });
  wireSelection({ onDeleted: renderState });
  wireUploads({ folderOf: uploadFolderOf, onListed: showUploaded });
  try {
    await loadConfig();
  } catch (error) {
    $("loading").textContent = `This page is not configured (${error.message}). Ask the person who deployed it.`;
    return;
  }
  await resumeSession();
}

start();
