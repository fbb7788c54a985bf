// Uploads in parts kept for a reload: what POST /me/uploads answered, the person's, and the file's name, size
// and time (to know it again). In localStorage, for this browser's life; forgotten once completed or
// cancelled, and at sign-out (S3 drops the parts of an upload left a week).

import { session } from "./session.js";

const UNFINISHED_KEY = "s3-file-search.uploads";

function everyUnfinished() {
  try {
    return JSON.parse(localStorage.getItem(UNFINISHED_KEY)) || [];
  } catch {
    return [];
  }
}

function store(uploads) {
  if (uploads.length) localStorage.setItem(UNFINISHED_KEY, JSON.stringify(uploads));
  else localStorage.removeItem(UNFINISHED_KEY);
}

// The signed-in person's.
export const unfinishedUploads = () => everyUnfinished().filter((kept) => session && kept.user === session.user);

// `started`, what POST /me/uploads answered for `file`: an upload in parts.
export function keepUnfinished(started, file) {
  const { name, size, lastModified } = file;
  store([...everyUnfinished(), { ...started, user: session.user, name, size, lastModified }]);
}

// One (by its uploadId), or every one (at sign-out).
export function forgetUnfinished(uploadId = null) {
  store(uploadId ? everyUnfinished().filter((kept) => kept.uploadId !== uploadId) : []);
}

export const isTheFileOf = (kept, file) =>
  kept.name === file.name && kept.size === file.size && kept.lastModified === file.lastModified;
