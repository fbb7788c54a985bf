// S3 File Search's page: sign in, then browse, find, upload, download (one file or a zip of many) and delete
// one's own files through the API's /me/... routes. No library, no build step: this entry wires the modules, which index.html preloads.

import { filesOfDrop, uploadFolderOf, wireFolders } from "./folders.js";
import { loadList, wireList } from "./list.js";
import { $, loadConfig } from "./page.js";
import { wireSelection } from "./selection.js";
import { isAdmin, resumeSession, session, wireSignIn } from "./session.js";
import { wireUploads } from "./uploads.js";

function showFiles() {
  $("loading").hidden = true;
  $("sign-in-view").hidden = true;
  $("sign-in-error").textContent = "";
  $("files-view").hidden = false;
  $("account").hidden = false;
  $("who").textContent = session.username;
  $("scope-fields").hidden = !isAdmin();
  $("uploads").replaceChildren();
  loadList(true);
}

async function start() {
  wireSignIn(showFiles);
  wireList();
  wireFolders();
  wireSelection();
  wireUploads({ folderOf: uploadFolderOf, filesOfDrop });
  // A phone shows the files first: the filters beyond the name stay folded until asked for.
  $("more-filters").open = window.matchMedia("(min-width: 40rem)").matches;
  try {
    await loadConfig();
  } catch (error) {
    $("loading").textContent = `This page is not configured (${error.message}). Ask the person who deployed it.`;
    return;
  }
  await resumeSession();
}

start();
