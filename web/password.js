// Passwords: "Forgot password?" (Cognito's ForgotPassword, then ConfirmForgotPassword with the code sent to
// the person) and "Change password" (ChangePassword with the access token), through the page's public client
// as signing in is. The pool's rules (config.json's passwordPolicy) are said under every new password's
// field and checked here before anything is sent: Cognito checks them too, except where an emulator does not.
// Loaded at the first "Forgot password?" or "Change password", never with the page.

import { cognito } from "./cognito.js";
import { $, config, el, say } from "./page.js";
import { refresh, session, showSignIn, signIn } from "./session.js";

// What Cognito counts as a symbol; a space counts too, inside a password (none may start or end with one).
const SYMBOLS = "^$*.[]{}()?\"!@#%&/\\,><':;|_~`=+-";
// Cognito's API takes no longer password.
const MAX_LENGTH = 256;
const TOO_MANY = "Too many attempts. Wait a while, then try again.";

// The pool's rules in words ("" when config.json has none: an existing pool's are not known to the stack).
export function passwordRules(policy = config.passwordPolicy) {
  if (!policy) return "";
  const kinds = [
    policy.requireLowercase && "a lowercase letter",
    policy.requireUppercase && "an uppercase letter",
    policy.requireNumbers && "a number",
    policy.requireSymbols && "a symbol such as ! # $ % or -",
  ].filter(Boolean);
  const least = `At least ${policy.minimumLength} characters`;
  if (!kinds.length) return `${least}.`;
  const listed = kinds.length > 1 ? `${kinds.slice(0, -1).join(", ")} and ${kinds.at(-1)}` : kinds[0];
  return `${least}, with ${listed}.`;
}

// The first rule `password` breaks, in words; "" when it keeps them all.
export function brokenRule(password, policy = config.passwordPolicy) {
  if (!password) return "Enter a new password.";
  if (/^\s|\s$/.test(password)) return "The new password must not start or end with a space.";
  if (password.length > MAX_LENGTH) return `The new password must have at most ${MAX_LENGTH} characters.`;
  if (!policy) return "";
  if (password.length < policy.minimumLength) {
    return `The new password needs at least ${policy.minimumLength} characters (it has ${password.length}).`;
  }
  if (policy.requireLowercase && !/[a-z]/.test(password)) return "The new password needs a lowercase letter.";
  if (policy.requireUppercase && !/[A-Z]/.test(password)) return "The new password needs an uppercase letter.";
  if (policy.requireNumbers && !/[0-9]/.test(password)) return "The new password needs a number.";
  if (policy.requireSymbols && ![...password].some((c) => SYMBOLS.includes(c) || c === " ")) {
    return "The new password needs a symbol such as ! # $ % or -.";
  }
  return "";
}

// A label and a password field; a new password's says the rules under it and names `errorId`'s message.
function passwordField(id, label, autocomplete, errorId) {
  const input = el("input", { id, type: "password", autocomplete, required: true });
  const parts = [el("label", { htmlFor: id, textContent: label }), input];
  const describedBy = [errorId];
  if (autocomplete === "new-password" && passwordRules()) {
    parts.push(el("p", { id: `${id}-rules`, className: "status", textContent: passwordRules() }));
    describedBy.unshift(`${id}-rules`);
  }
  input.setAttribute("aria-describedby", describedBy.join(" "));
  return parts;
}

// Says `message` in `error` (a role=alert element) about `field`, marked invalid and focused.
function refuse(field, error, message) {
  error.textContent = message;
  if (field) {
    field.setAttribute("aria-invalid", "true");
    field.focus();
  }
}

function clearRefusal(form, error) {
  error.textContent = "";
  for (const field of form.querySelectorAll("[aria-invalid]")) field.removeAttribute("aria-invalid");
}

// -- Forgot password: the user name, a code sent to them, the code and a new password --

function forgotMessage(error) {
  if (error.type === "LimitExceededException" || error.type === "TooManyRequestsException") return TOO_MANY;
  // Only a pool that reveals who exists answers this; the page says no more than the pool does.
  if (error.type === "UserNotFoundException") return "No code can be sent for that user name.";
  if (error.type === "InvalidParameterException" || error.type === "NotAuthorizedException") {
    return "Your password cannot be reset here: ask an administrator to reset it.";
  }
  if (error.type === "CodeDeliveryFailureException") return "The code could not be sent. Try again later.";
  return error.message || "The code could not be sent.";
}

function resetMessage(error) {
  // An unknown person is answered as a wrong code (Cognito does the same when it hides who exists).
  if (["CodeMismatchException", "UserNotFoundException", "ResourceNotFoundException"].includes(error.type)) {
    return "That code is not right. Check it, or ask for a new code.";
  }
  if (error.type === "ExpiredCodeException") return "That code has expired or is no longer the latest one. Ask for a new code.";
  if (error.type === "InvalidPasswordException") return `The new password was refused: ${error.message}`;
  if (["LimitExceededException", "TooManyFailedAttemptsException", "TooManyRequestsException"].includes(error.type)) return TOO_MANY;
  return error.message || "The password could not be changed.";
}

function resetForms() {
  if ($("forgot-form")) return;
  const back = () =>
    el("button", { type: "button", className: "link", textContent: "Back to sign-in", onclick: () => showSignIn() });
  const forgot = el(
    "form",
    { id: "forgot-form", className: "password-reset", noValidate: true },
    el("p", { textContent: "Forgot your password? Enter your user name: a code to choose a new one is sent to you." }),
    el("label", { htmlFor: "forgot-username", textContent: "Your user name" }),
    el("input", { id: "forgot-username", autocomplete: "username", required: true }),
    el("button", { type: "submit", textContent: "Send code" }),
    back(),
  );
  const reset = el(
    "form",
    { id: "reset-form", className: "password-reset", noValidate: true, hidden: true },
    el("label", { htmlFor: "reset-code", textContent: "Code you were sent" }),
    el("input", { id: "reset-code", inputMode: "numeric", autocomplete: "one-time-code", required: true }),
    ...passwordField("reset-password", "Choose a new password", "new-password", "sign-in-error"),
    el("button", { type: "submit", textContent: "Set password and sign in" }),
    el("button", { type: "button", className: "link", textContent: "Send a new code", onclick: () => sendCode(true) }),
    back(),
  );
  forgot.addEventListener("submit", (event) => {
    event.preventDefault();
    sendCode(false);
  });
  reset.addEventListener("submit", (event) => {
    event.preventDefault();
    confirmReset();
  });
  $("sign-in-form").after(forgot, reset);
}

export function forgotPassword() {
  resetForms();
  $("sign-in-form").hidden = true;
  if ($("providers")) $("providers").hidden = true;
  $("sign-in-error").textContent = "";
  $("sign-in-status").textContent = "";
  $("forgot-username").value = $("username").value.trim();
  $("forgot-form").hidden = false;
  $("forgot-username").focus();
}

async function sendCode(again) {
  const form = $("forgot-form");
  const username = $("forgot-username").value.trim();
  clearRefusal(form, $("sign-in-error"));
  $("sign-in-status").textContent = "";
  if (!username) {
    refuse($("forgot-username"), $("sign-in-error"), "Enter your user name.");
    return;
  }
  try {
    const answer = await cognito("ForgotPassword", { ClientId: config.userPoolClientId, Username: username });
    const sent = answer.CodeDeliveryDetails || {};
    const how = { EMAIL: " by email", SMS: " by text message" }[sent.DeliveryMedium] || "";
    form.hidden = true;
    $("reset-form").hidden = false;
    $("sign-in-status").textContent = `${again ? "A new code" : "A code"} was sent${how}${sent.Destination ? ` to ${sent.Destination}` : ""}.`;
    $("reset-code").value = "";
    $("reset-code").focus();
  } catch (error) {
    const message = forgotMessage(error);
    if (again) {
      $("sign-in-error").textContent = message;
    } else {
      refuse($("forgot-username"), $("sign-in-error"), message);
    }
  }
}

async function confirmReset() {
  const username = $("forgot-username").value.trim();
  const code = $("reset-code").value.trim();
  const password = $("reset-password").value;
  clearRefusal($("reset-form"), $("sign-in-error"));
  if (!code) return refuse($("reset-code"), $("sign-in-error"), "Enter the code you were sent.");
  const broken = brokenRule(password);
  if (broken) return refuse($("reset-password"), $("sign-in-error"), broken);
  const submit = $("reset-form").querySelector("[type=submit]");
  submit.disabled = true;
  try {
    await cognito("ConfirmForgotPassword", {
      ClientId: config.userPoolClientId,
      Username: username,
      ConfirmationCode: code,
      Password: password,
    });
  } catch (error) {
    const wrongCode = ["CodeMismatchException", "ExpiredCodeException", "UserNotFoundException", "ResourceNotFoundException"];
    refuse(wrongCode.includes(error.type) ? $("reset-code") : $("reset-password"), $("sign-in-error"), resetMessage(error));
    return;
  } finally {
    submit.disabled = false;
  }
  const changed = "Your password has been changed.";
  for (const form of document.querySelectorAll("#sign-in-view .password-reset")) form.remove();
  if ($("providers")) $("providers").hidden = false;
  $("sign-in-form").hidden = false;
  $("sign-in-status").textContent = changed;
  try {
    await signIn(username, password);
    if (session) say(changed);
  } catch {
    // Signed in or not, the password is changed: the sign-in form says so, with the user name filled in.
    showSignIn("", `${changed} Sign in with your new password.`);
    $("username").value = username;
    $("password").focus();
  }
}

// -- Change password, signed in: a modal dialog --

function passwordDialog() {
  if ($("password-dialog")) return $("password-dialog");
  const form = el(
    "form",
    { id: "password-form", noValidate: true },
    el("h2", { id: "password-dialog-title", textContent: "Change password" }),
    ...passwordField("current-password", "Current password", "current-password", "password-error"),
    ...passwordField("changed-password", "Choose a new password", "new-password", "password-error"),
    el("p", { id: "password-error", className: "error", role: "alert" }),
    el(
      "div",
      { className: "dialog-actions" },
      el("button", { type: "submit", id: "password-save", textContent: "Save new password" }),
      el("button", { type: "button", textContent: "Cancel", onclick: () => dialog.close() }),
    ),
  );
  const dialog = el("dialog", { id: "password-dialog" }, form);
  dialog.setAttribute("aria-labelledby", "password-dialog-title");
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    savePassword(dialog);
  });
  document.body.append(dialog);
  return dialog;
}

function changeMessage(error) {
  if (error.type === "NotAuthorizedException") {
    return /access token/i.test(error.message)
      ? "Your session has expired. Sign out, sign in again, then change your password."
      : "Your current password is not right.";
  }
  if (error.type === "InvalidPasswordException") return `The new password was refused: ${error.message}`;
  if (error.type === "PasswordHistoryPolicyViolationException") return "Choose a password you have not used recently.";
  if (["LimitExceededException", "TooManyRequestsException"].includes(error.type)) return TOO_MANY;
  return error.message || "The password could not be changed.";
}

export function changePassword() {
  const dialog = passwordDialog();
  const opener = document.activeElement;
  dialog.onclose = () => {
    $("current-password").value = "";
    $("changed-password").value = "";
    clearRefusal($("password-form"), $("password-error"));
    if (opener && opener.isConnected) opener.focus();
  };
  dialog.showModal();
  $("current-password").focus();
}

async function savePassword(dialog) {
  const current = $("current-password");
  const proposed = $("changed-password");
  const error = $("password-error");
  clearRefusal($("password-form"), error);
  if (!current.value) return refuse(current, error, "Enter your current password.");
  const broken = brokenRule(proposed.value);
  if (broken) return refuse(proposed, error, broken);
  if (proposed.value === current.value) return refuse(proposed, error, "The new password must differ from the current one.");
  $("password-save").disabled = true;
  try {
    // A session kept before the page held access tokens gets one now.
    if (!session.accessToken) await refresh();
    await cognito("ChangePassword", {
      AccessToken: session.accessToken,
      PreviousPassword: current.value,
      ProposedPassword: proposed.value,
    });
  } catch (failure) {
    const field = failure.type === "NotAuthorizedException" ? current : proposed;
    refuse(field, error, changeMessage(failure));
    return;
  } finally {
    $("password-save").disabled = false;
  }
  dialog.close();
  say("Your password has been changed.");
}
