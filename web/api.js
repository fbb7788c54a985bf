// The API with the person's ID token (refreshed when due or after a 401); 429 and 503 are asked again.

import { config } from "./page.js";
import { expireSession, refresh, session } from "./session.js";

export const RETRY_LATER = [429, 503];
const RETRY_LATER_TRIES = 3;
const RETRY_FIRST_MS = 250;

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export const keyPath = (key) => encodeURIComponent(key);

export function splitKey(key) {
  const cut = key.lastIndexOf("/");
  const split = cut < 0 ? { folder: "", name: key } : { folder: key.slice(0, cut), name: key.slice(cut + 1) };
  // One's own files live under one's own prefix: show the folder within it.
  const own = session && session.user;
  if (own && split.folder === own) split.folder = "";
  else if (own && split.folder.startsWith(`${own}/`)) split.folder = split.folder.slice(own.length + 1);
  return split;
}

class ApiError extends Error {
  // `body`: the answer's JSON (a 409 of an upload carries the file that is there), or null.
  constructor(status, message, body = null) {
    super(message);
    this.status = status;
    this.body = body;
  }
}

export async function api(path, options = {}, retried = false, attempt = 0) {
  if (session && session.expiresAt - Date.now() < 30 * 1000) {
    await refresh().catch(() => {});
  }
  if (!session) throw new ApiError(401, "not signed in");
  let response;
  try {
    response = await fetch(`${config.apiUrl}${path}`, {
      ...options,
      headers: { ...(options.headers || {}), Authorization: session.idToken },
    });
  } catch {
    throw new ApiError(0, "The file service cannot be reached. Check your connection and try again.");
  }
  if (RETRY_LATER.includes(response.status) && attempt < RETRY_LATER_TRIES) {
    await sleep(retryAfterMs(response, RETRY_FIRST_MS * 2 ** attempt));
    return api(path, options, retried, attempt + 1);
  }
  if (response.status === 401) {
    if (!retried && session.refreshToken) {
      try {
        await refresh();
        return api(path, options, true);
      } catch {
        /* the refresh token is no good either */
      }
    }
    expireSession();
    throw new ApiError(401, "Your session has expired. Please sign in again.");
  }
  if (response.status === 204) return null;
  const body = await response.json().catch(() => null);
  if (!response.ok) {
    const message = (body && body.message) || `The file service answered ${response.status}.`;
    throw new ApiError(response.status, message, body);
  }
  return body;
}

// The wait a 429 or 503 asks for (Retry-After, when the page may read it), at most 10 s.
function retryAfterMs(response, otherwise) {
  const seconds = parseInt(response.headers.get("Retry-After"), 10);
  return seconds >= 0 ? Math.min(seconds * 1000, 10000) : otherwise;
}
