// Sign-in and tokens: Cognito's JSON API (cognito.js) and the sign-in view. Tokens live in sessionStorage
// (gone with the tab); the password goes to Cognito only; the ID token is refreshed before it expires.
// With identity providers (config.json's `identityProviders`), "Sign in with <name>" goes through the user
// pool's managed login domain: an authorization code with PKCE, redeemed, refreshed and revoked at the
// domain's OAuth endpoints; signing out then ends the managed login's own session at the domain's /logout.
// "Forgot password?" and "Change password" load password.js at their first use (app.js says how).

import { cognito, CognitoError, oauthEndpoint } from "./cognito.js";
import { $, config, el, forgetNotice } from "./page.js";

const SESSION_KEY = "s3-file-search.session";
const REFRESH_MARGIN_MS = 5 * 60 * 1000;
// The PKCE verifier and state of a sign-in that left for an identity provider (this tab only).
const OAUTH_KEY = "s3-file-search.oauth";
// Set while the tab is away at the managed login's /logout: back on the page, it says "You are signed out."
const SIGNED_OUT_KEY = "s3-file-search.signed-out";
// How long sign-out waits for the domain to revoke the refresh token before it leaves for /logout anyway.
const REVOKE_WAIT_MS = 5000;

// Who is signed in (null: nobody).
export let session = null;
let refreshTimer = null;
let pendingChallenge = null;
let signedIn = () => {};

function claimsOf(token) {
  const payload = token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
  const binary = atob(payload.padEnd(payload.length + ((4 - (payload.length % 4)) % 4), "="));
  return JSON.parse(new TextDecoder().decode(Uint8Array.from(binary, (c) => c.charCodeAt(0))));
}

// `via`: "password" (Cognito's API) or "oauth" (the managed login domain), which refreshes and revokes.
function keepSession(result, username, via = "password") {
  const idToken = result.IdToken;
  const claims = claimsOf(idToken);
  session = {
    via,
    idToken,
    // What ChangePassword takes (a password sign-in's).
    accessToken: result.AccessToken || null,
    refreshToken: result.RefreshToken || (session && session.refreshToken),
    expiresAt: claims.exp * 1000,
    username: claims["cognito:username"] || username,
    // The claim the API names a person's files by (their uploadUser).
    user: claims[config.userClaim || "sub"],
    groups: [].concat(claims["cognito:groups"] || []),
  };
  sessionStorage.setItem(SESSION_KEY, JSON.stringify(session));
  scheduleRefresh();
}

function scheduleRefresh() {
  clearTimeout(refreshTimer);
  if (!session || !session.refreshToken) return;
  const wait = Math.max(session.expiresAt - Date.now() - REFRESH_MARGIN_MS, 1000);
  refreshTimer = setTimeout(() => refresh().catch(() => expireSession()), wait);
}

export async function refresh() {
  if (!session || !session.refreshToken) throw new Error("no refresh token");
  if (session.via === "oauth") {
    const tokens = await oauthEndpoint("token", {
      grant_type: "refresh_token",
      client_id: config.userPoolClientId,
      refresh_token: session.refreshToken,
    });
    keepSession({ IdToken: tokens.id_token }, session.username, "oauth");
    return;
  }
  const answer = await cognito("InitiateAuth", {
    AuthFlow: "REFRESH_TOKEN_AUTH",
    ClientId: config.userPoolClientId,
    AuthParameters: { REFRESH_TOKEN: session.refreshToken },
  });
  keepSession(answer.AuthenticationResult, session.username);
}

function forgetSession() {
  clearTimeout(refreshTimer);
  session = null;
  sessionStorage.removeItem(SESSION_KEY);
}

export function expireSession() {
  forgetSession();
  showSignIn("Your session has expired. Please sign in again.");
}

export function isAdmin() {
  return Boolean(session && config.adminGroup && session.groups.includes(config.adminGroup));
}

// The tab's session (refreshed if expired) and the files, else sign-in.
export async function resumeSession() {
  addProviderButtons();
  const signedOut = sessionStorage.getItem(SIGNED_OUT_KEY) !== null;
  sessionStorage.removeItem(SIGNED_OUT_KEY);
  if (await finishProviderSignIn()) return;
  const kept = sessionStorage.getItem(SESSION_KEY);
  if (kept) {
    try {
      session = JSON.parse(kept);
    } catch {
      session = null;
    }
  }
  if (session && session.expiresAt > Date.now()) {
    scheduleRefresh();
    signedIn();
  } else if (session) {
    try {
      await refresh();
      signedIn();
    } catch {
      expireSession();
    }
  } else {
    showSignIn("", signedOut ? "You are signed out." : "");
  }
}

export async function signIn(username, password) {
  const answer = await cognito("InitiateAuth", {
    AuthFlow: "USER_PASSWORD_AUTH",
    ClientId: config.userPoolClientId,
    AuthParameters: { USERNAME: username, PASSWORD: password },
  });
  await finishSignIn(answer, username);
}

async function finishSignIn(answer, username) {
  if (answer.AuthenticationResult) {
    pendingChallenge = null;
    keepSession(answer.AuthenticationResult, username);
    signedIn();
    $("files-title").focus();
    return;
  }
  pendingChallenge = { name: answer.ChallengeName, session: answer.Session, username };
  $("sign-in-form").hidden = true;
  if (answer.ChallengeName === "NEW_PASSWORD_REQUIRED") {
    $("new-password-form").hidden = false;
    $("new-password").focus();
  } else if (answer.ChallengeName === "SOFTWARE_TOKEN_MFA") {
    $("mfa-form").hidden = false;
    $("mfa-code").focus();
  } else {
    throw new CognitoError("Challenge", `This page cannot answer the sign-in step ${answer.ChallengeName}.`);
  }
}

async function answerChallenge(responses) {
  const challenge = pendingChallenge;
  const answer = await cognito("RespondToAuthChallenge", {
    ChallengeName: challenge.name,
    ClientId: config.userPoolClientId,
    Session: challenge.session,
    ChallengeResponses: { USERNAME: challenge.username, ...responses },
  });
  $("new-password-form").hidden = true;
  $("mfa-form").hidden = true;
  $("sign-in-form").hidden = false;
  await finishSignIn(answer, challenge.username);
}

function signInMessage(error) {
  if (error.type === "NotAuthorizedException" || error.type === "UserNotFoundException") {
    return "Wrong user name or password.";
  }
  if (error.type === "PasswordResetRequiredException") return "Your password must be reset: ask an administrator.";
  if (error.type === "InvalidPasswordException") return error.message;
  if (error.type === "CodeMismatchException") return "That code is not right. Try again.";
  return error.message || "Sign-in failed.";
}

// -- Sign-in with an organisation: the authorization code grant with PKCE at the managed login domain --

function base64url(bytes) {
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function randomText(byteCount) {
  return base64url(crypto.getRandomValues(new Uint8Array(byteCount)));
}

// Sign-out after an organisation's sign-in: the refresh token revoked (waited for, a few seconds at most,
// since leaving the page would cancel the request), then the managed login's own session (its cookie at
// the domain) ended at /logout, which sends the browser back to the page: the app client's sign-out URL.
// Without it, the next "Sign in with <name>" on this browser would sign in as this person again.
async function signOutOfManagedLogin(token) {
  showSignIn("", "Signing out…");
  $("sign-in-form").hidden = true;
  if ($("providers")) $("providers").hidden = true;
  if (token) {
    const revoked = oauthEndpoint("revoke", { token, client_id: config.userPoolClientId }).catch(() => {});
    await Promise.race([revoked, new Promise((resolve) => setTimeout(resolve, REVOKE_WAIT_MS))]);
  }
  sessionStorage.setItem(SIGNED_OUT_KEY, "1");
  const query = new URLSearchParams({ client_id: config.userPoolClientId, logout_uri: config.signInRedirectUri });
  location.assign(`${config.signInDomain}/logout?${query}`);
}

async function signInWith(provider) {
  const verifier = randomText(48);
  const state = randomText(16);
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier));
  sessionStorage.setItem(OAUTH_KEY, JSON.stringify({ state, verifier }));
  const query = new URLSearchParams({
    identity_provider: provider,
    client_id: config.userPoolClientId,
    response_type: "code",
    redirect_uri: config.signInRedirectUri,
    scope: "openid email profile",
    state,
    code_challenge_method: "S256",
    code_challenge: base64url(new Uint8Array(digest)),
  });
  location.assign(`${config.signInDomain}/oauth2/authorize?${query}`);
}

// Back from the provider with ?code=&state= (or ?error=): redeem the code with this tab's verifier, once.
async function finishProviderSignIn() {
  const answer = new URLSearchParams(location.search);
  if (!config.signInDomain || (!answer.has("code") && !answer.has("error"))) return false;
  const pending = JSON.parse(sessionStorage.getItem(OAUTH_KEY) || "null");
  sessionStorage.removeItem(OAUTH_KEY);
  // The code leaves the address bar and the history at once.
  history.replaceState(null, "", location.pathname);
  if (answer.has("error")) {
    // Cognito's description may be a sentence of its own (a pre sign-up trigger's refusal ends with one).
    const why = (answer.get("error_description") || answer.get("error")).replace(/\.+$/, "");
    showSignIn(`Sign-in with your organisation failed: ${why}.`);
    return true;
  }
  if (!pending || pending.state !== answer.get("state")) {
    showSignIn("That sign-in did not start on this page. Please sign in again.");
    return true;
  }
  try {
    const tokens = await oauthEndpoint("token", {
      grant_type: "authorization_code",
      client_id: config.userPoolClientId,
      code: answer.get("code"),
      redirect_uri: config.signInRedirectUri,
      code_verifier: pending.verifier,
    });
    keepSession({ IdToken: tokens.id_token, RefreshToken: tokens.refresh_token }, "", "oauth");
  } catch {
    showSignIn("Sign-in with your organisation could not be completed. Please try again.");
    return true;
  }
  signedIn();
  $("files-title").focus();
  return true;
}

function addProviderButtons() {
  const providers = config.identityProviders || [];
  if (!providers.length || $("providers")) return;
  const group = el("div", { id: "providers" });
  group.setAttribute("role", "group");
  group.setAttribute("aria-label", "Sign in with your organisation");
  for (const provider of providers) {
    const button = el("button", { type: "button", textContent: `Sign in with ${provider}` });
    button.addEventListener("click", () => {
      button.disabled = true;
      signInWith(provider).catch(() => {
        button.disabled = false;
        $("sign-in-error").textContent = "This browser cannot start that sign-in.";
      });
    });
    group.append(button);
  }
  $("sign-in-form").after(group);
}

export function showSignIn(message = "", status = "") {
  // The last action's notice was about the files of whoever was signed in (an ended session too).
  forgetNotice();
  const dialog = $("password-dialog");
  if (dialog && dialog.open) dialog.close();
  for (const form of document.querySelectorAll("#sign-in-view .password-reset")) form.remove();
  if ($("providers")) $("providers").hidden = false;
  $("loading").hidden = true;
  $("files-view").hidden = true;
  $("account").hidden = true;
  $("sign-in-view").hidden = false;
  $("sign-in-form").hidden = false;
  $("new-password-form").hidden = true;
  $("mfa-form").hidden = true;
  $("password").value = "";
  $("sign-in-error").textContent = message;
  $("sign-in-status").textContent = status;
  $("username").focus();
}

// "Forgot password?" under the sign-in form, "Change password" beside "Sign out" for a password sign-in
// (a person signed in through their organisation changes their password there).
function addPasswordButtons(open) {
  const button = (id, text, step) => el("button", { type: "button", id, textContent: text, onclick: () => open(step) });
  $("sign-in-button").after(Object.assign(button("forgot-password", "Forgot password?", "forgotPassword"), { className: "link" }));
  $("sign-out").before(button("change-password", "Change password", "changePassword"));
}

// `onSignedIn` shows a signed-in person's view; `openPassword(step)`, a step of password.js.
export function wireSignIn(onSignedIn, openPassword) {
  signedIn = () => {
    onSignedIn();
    $("change-password").hidden = !session || session.via !== "password";
  };
  addPasswordButtons(openPassword);
  $("sign-in-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const username = $("username").value.trim();
    const password = $("password").value;
    if (!username || !password) {
      $("sign-in-error").textContent = "Enter your user name and password.";
      return;
    }
    $("sign-in-button").disabled = true;
    $("sign-in-error").textContent = "";
    $("sign-in-status").textContent = "";
    try {
      await signIn(username, password);
    } catch (error) {
      $("sign-in-error").textContent = signInMessage(error);
      $("password").value = "";
      $("password").focus();
    } finally {
      $("sign-in-button").disabled = false;
    }
  });
  $("new-password-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      await answerChallenge({ NEW_PASSWORD: $("new-password").value });
    } catch (error) {
      $("sign-in-error").textContent = signInMessage(error);
    } finally {
      $("new-password").value = "";
    }
  });
  $("mfa-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      await answerChallenge({ SOFTWARE_TOKEN_MFA_CODE: $("mfa-code").value.trim() });
    } catch (error) {
      $("sign-in-error").textContent = signInMessage(error);
    }
  });
  $("sign-out").addEventListener("click", () => {
    const token = session && session.refreshToken;
    const via = session && session.via;
    forgetSession();
    if (via === "oauth" && config.signInDomain) {
      signOutOfManagedLogin(token);
      return;
    }
    if (token) cognito("RevokeToken", { Token: token, ClientId: config.userPoolClientId }).catch(() => {});
    showSignIn("", "You are signed out.");
  });
}
