// An admin finds a person by name: what is typed in "User" is looked up in the user pool (GET /me/people?q=,
// the names the deployment shows), offered as choices, and a chosen name lists that person's files by
// their user value, which the page never shows. Loaded at the first key typed there, never with the page.

import { api } from "./api.js";
import { $, el } from "./page.js";

const byName = new Map(); // a name offered → the person's user value
let timer = 0;

// The user value of the person whose name is `typed`, or what was typed (an admin may type a user value).
export const userOf = (typed) => byName.get(typed) ?? typed;

export function suggest() {
  clearTimeout(timer);
  timer = setTimeout(async () => {
    const typed = $("scope-user").value.trim();
    if (!typed || byName.has(typed)) return;
    let list = $("people-choices");
    if (!list) {
      list = el("datalist", { id: "people-choices" });
      $("scope-user").after(list);
      $("scope-user").setAttribute("list", "people-choices");
    }
    const found = await api(`/me/people?q=${encodeURIComponent(typed)}`).catch(() => null);
    const options = [];
    for (const { user, name } of (found && found.people) || []) {
      // Two people of one name are told apart by a count, never by their user value.
      let shown = name;
      for (let n = 2; byName.has(shown) && byName.get(shown) !== user; n += 1) shown = `${name} (${n})`;
      byName.set(shown, user);
      options.push(el("option", { value: shown }));
    }
    list.replaceChildren(...options);
  }, 250);
}
