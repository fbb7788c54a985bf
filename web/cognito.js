// The sign-in service's calls, as api.js is the API's: Cognito's JSON API, and the managed login domain's
// OAuth endpoints (identity providers). Each answers its JSON, else a CognitoError.

import { config } from "./page.js";

const UNREACHABLE = "The sign-in service cannot be reached. Check your connection.";

export class CognitoError extends Error {
  constructor(type, message) {
    super(message);
    this.type = type;
  }
}

// One call of Cognito's JSON API as the page's public client (no secret, no signature): its answer, else a
// CognitoError with Cognito's error type.
export async function cognito(action, body) {
  const endpoint = config.cognitoEndpoint || `https://cognito-idp.${config.region}.amazonaws.com/`;
  let response;
  try {
    response = await fetch(endpoint, {
      method: "POST",
      headers: {
        "Content-Type": "application/x-amz-json-1.1",
        "X-Amz-Target": `AWSCognitoIdentityProviderService.${action}`,
      },
      body: JSON.stringify(body),
    });
  } catch {
    throw new CognitoError("Network", UNREACHABLE);
  }
  const answer = await response.json().catch(() => ({}));
  if (!response.ok) {
    const type = String(answer.__type || "").split("#").pop();
    throw new CognitoError(type, answer.message || "Sign-in failed.");
  }
  return answer;
}

// POST to the domain's /oauth2/token or /oauth2/revoke (a form, so no preflight); the JSON answer.
export async function oauthEndpoint(name, form) {
  let response;
  try {
    response = await fetch(`${config.signInDomain}/oauth2/${name}`, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams(form),
    });
  } catch {
    throw new CognitoError("Network", UNREACHABLE);
  }
  const answer = await response.json().catch(() => ({}));
  if (!response.ok) throw new CognitoError(answer.error || "OAuth", answer.error_description || "Sign-in failed.");
  return answer;
}
