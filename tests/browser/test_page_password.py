"""Forgotten and changed passwords, as a person meets them: headless Chromium against the local stack.

"Forgot password?" sends a code (moto gives it back in a response header of the page's own ForgotPassword
call, which the test reads from the browser's network) and sets the new password with it; "Change password"
is a modal dialog. The pool's rules are shown under each new password's field before typing and checked in
the page: a password that breaks one is refused with the rule named, and nothing is sent to Cognito.
"""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import pytest

from tests.browser.helpers import axe_violations, fresh_person, sign_in, signed_in

from playwright.sync_api import Page, Request, Response, expect  # isort: skip

pytestmark = pytest.mark.xdist_group("browser")

MOTO_CODE_HEADER = "x-moto-forgot-password-confirmation-code"
RULES = "At least 12 characters, with a lowercase letter, an uppercase letter, a number and a symbol"


def _cognito_call(action: str) -> Any:
    """A matcher of the page's requests (or responses) of one Cognito action."""

    def matches(message: Request | Response) -> bool:
        request = message if isinstance(message, Request) else message.request
        return request.headers.get("x-amz-target", "").endswith(f".{action}")

    return matches


def _calls(page: Page, action: str) -> list[Request]:
    """Records every request of `action` the page makes from now on."""
    seen: list[Request] = []
    page.on("request", lambda request: seen.append(request) if _cognito_call(action)(request) else None)
    return seen


def test_the_page_learns_the_pools_rules(ready: dict[str, Any]) -> None:
    with urllib.request.urlopen(f"{ready['webUrl']}/config.json", timeout=10) as answer:  # noqa: S310
        config = json.loads(answer.read())
    assert config["passwordPolicy"] == {
        "minimumLength": 12,
        "requireLowercase": True,
        "requireUppercase": True,
        "requireNumbers": True,
        "requireSymbols": True,
    }


def test_a_person_changes_their_password_and_signs_in_with_the_new_one(
    page: Page, ready: dict[str, Any]
) -> None:
    old = fresh_person(ready, "pwchange")
    new = "Brand-new-Passw0rd!"
    signed_in(page, ready, "pwchange", old)
    page.get_by_role("button", name="Change password").click()
    dialog = page.get_by_role("dialog", name="Change password")
    expect(dialog).to_be_visible()
    # The rules are there before typing, and the new password's field is described by them.
    expect(dialog.get_by_label("Choose a new password")).to_have_accessible_description(
        f"{RULES} such as ! # $ % or -."
    )
    dialog.get_by_label("Current password").fill("Not-the-Passw0rd!")
    dialog.get_by_label("Choose a new password").fill(new)
    dialog.get_by_role("button", name="Save new password").click()
    expect(dialog.get_by_role("alert")).to_have_text("Your current password is not right.")
    expect(dialog.get_by_label("Current password")).to_have_attribute("aria-invalid", "true")
    dialog.get_by_label("Current password").fill(old)
    with page.expect_response(_cognito_call("ChangePassword")) as changed:
        dialog.get_by_role("button", name="Save new password").click()
    assert changed.value.status == 200
    expect(dialog).to_be_hidden()
    expect(page.locator("#notice")).to_have_text("Your password has been changed.")
    expect(page.get_by_role("button", name="Change password")).to_be_focused()
    page.get_by_role("button", name="Sign out").click()
    # The old password is refused, the new one signs in.
    sign_in(page, ready, "pwchange", old)
    expect(page.locator("#sign-in-error")).to_have_text("Wrong user name or password.")
    signed_in(page, ready, "pwchange", new)


def test_a_forgotten_password_is_reset_with_the_code_sent(page: Page, ready: dict[str, Any]) -> None:
    old = fresh_person(ready, "pwforgot")
    new = "Reset-by-c0de-Passw0rd"
    page.goto(ready["webUrl"])
    page.get_by_label("User name", exact=True).fill("pwforgot")
    page.get_by_role("button", name="Forgot password?").click()
    expect(page.get_by_label("Your user name")).to_be_focused()
    expect(page.get_by_label("Your user name")).to_have_value("pwforgot")
    with page.expect_response(_cognito_call("ForgotPassword")) as asked:
        page.get_by_role("button", name="Send code").click()
    # moto hands the code back in a header of the page's own request (Cognito emails it).
    code = asked.value.all_headers()[MOTO_CODE_HEADER]
    expect(page.locator("#sign-in-status")).to_contain_text("A code was sent")
    expect(page.get_by_label("Code you were sent")).to_be_focused()
    expect(page.get_by_label("Choose a new password")).to_have_accessible_description(
        f"{RULES} such as ! # $ % or -."
    )
    # A code that is not the one sent is said in words (moto answers it as no longer the latest code).
    page.get_by_label("Code you were sent").fill("moto-confirmation-code:000000")
    page.get_by_label("Choose a new password").fill(new)
    page.get_by_role("button", name="Set password and sign in").click()
    expect(page.locator("#sign-in-error")).to_have_text(
        "That code has expired or is no longer the latest one. Ask for a new code."
    )
    expect(page.get_by_label("Code you were sent")).to_have_attribute("aria-invalid", "true")
    page.get_by_label("Code you were sent").fill(code)
    with page.expect_response(_cognito_call("ConfirmForgotPassword")) as confirmed:
        page.get_by_role("button", name="Set password and sign in").click()
    assert confirmed.value.status == 200
    expect(page.get_by_text("Signed in as")).to_contain_text("pwforgot")
    expect(page.locator("#notice")).to_have_text("Your password has been changed.")
    page.get_by_role("button", name="Sign out").click()
    sign_in(page, ready, "pwforgot", old)
    expect(page.locator("#sign-in-error")).to_have_text("Wrong user name or password.")
    signed_in(page, ready, "pwforgot", new)


@pytest.mark.parametrize(
    ("password", "rule"),
    [
        ("Sh0rt!", "The new password needs at least 12 characters (it has 6)."),
        ("ALL-UPPER-CASE-1", "The new password needs a lowercase letter."),
        ("all-lower-case-1", "The new password needs an uppercase letter."),
        ("No-Numbers-Here!", "The new password needs a number."),
        ("NoSymbolsHere123", "The new password needs a symbol such as ! # $ % or -."),
        (" Leading-Spac3!", "The new password must not start or end with a space."),
    ],
)
def test_a_new_password_breaking_a_rule_is_refused_before_sending(
    page: Page, ready: dict[str, Any], password: str, rule: str
) -> None:
    # moto applies no rule in ConfirmForgotPassword: only the page stands between these and the pool.
    page.goto(ready["webUrl"])
    page.get_by_role("button", name="Forgot password?").click()
    page.get_by_label("Your user name").fill("demo")
    page.get_by_role("button", name="Send code").click()
    expect(page.get_by_label("Code you were sent")).to_be_visible()
    sent = _calls(page, "ConfirmForgotPassword")
    page.get_by_label("Code you were sent").fill("123456")
    page.get_by_label("Choose a new password").fill(password)
    page.get_by_role("button", name="Set password and sign in").click()
    field = page.get_by_label("Choose a new password")
    expect(page.locator("#sign-in-error")).to_have_text(rule)
    expect(field).to_have_attribute("aria-invalid", "true")
    expect(field).to_be_focused()
    expect(field).to_have_accessible_description(f"{RULES} such as ! # $ % or -. {rule}")
    assert sent == []


def test_the_dialog_refuses_a_broken_rule_before_sending(page: Page, ready: dict[str, Any]) -> None:
    password = fresh_person(ready, "pwrules")
    signed_in(page, ready, "pwrules", password)
    sent = _calls(page, "ChangePassword")
    page.get_by_role("button", name="Change password").click()
    dialog = page.get_by_role("dialog", name="Change password")
    dialog.get_by_label("Current password").fill(password)
    dialog.get_by_label("Choose a new password").fill("nouppercase-1!")
    dialog.get_by_role("button", name="Save new password").click()
    expect(dialog.get_by_role("alert")).to_have_text("The new password needs an uppercase letter.")
    expect(dialog.get_by_label("Choose a new password")).to_be_focused()
    assert sent == []


def test_the_dialog_is_accessible_and_works_with_the_keyboard_alone(
    page: Page, ready: dict[str, Any]
) -> None:
    old = fresh_person(ready, "pwkeys")
    new = "Keyboard-0nly-Passw0rd"
    signed_in(page, ready, "pwkeys", old)
    opener = page.get_by_role("button", name="Change password")
    opener.focus()
    page.keyboard.press("Enter")
    dialog = page.get_by_role("dialog", name="Change password")
    expect(dialog).to_be_visible()
    expect(dialog.get_by_label("Current password")).to_be_focused()
    assert axe_violations(page) == []
    # Escape closes it, focus back on the button that opened it, nothing kept.
    page.keyboard.type("half-typed")
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    expect(opener).to_be_focused()
    page.keyboard.press("Enter")
    expect(dialog.get_by_label("Current password")).to_be_focused()
    expect(dialog.get_by_label("Current password")).to_have_value("")
    page.keyboard.type(old)
    page.keyboard.press("Tab")
    expect(dialog.get_by_label("Choose a new password")).to_be_focused()
    page.keyboard.type(new)
    with page.expect_response(_cognito_call("ChangePassword")) as changed:
        page.keyboard.press("Enter")
    assert changed.value.status == 200
    expect(dialog).to_be_hidden()
    expect(opener).to_be_focused()
    expect(page.locator("#notice")).to_have_text("Your password has been changed.")


def test_a_person_of_an_identity_provider_is_not_offered_change_password(
    page: Page, ready: dict[str, Any]
) -> None:
    password = fresh_person(ready, "pwfederated")
    signed_in(page, ready, "pwfederated", password)
    expect(page.get_by_role("button", name="Change password")).to_be_visible()
    # The same person's session as the managed login domain would leave it (session.js's kind "oauth").
    page.evaluate(
        """() => {
            const key = 's3-file-search.session';
            const kept = JSON.parse(sessionStorage.getItem(key));
            sessionStorage.setItem(key, JSON.stringify({ ...kept, via: 'oauth' }));
        }"""
    )
    page.reload()
    expect(page.get_by_text("Signed in as")).to_contain_text("pwfederated")
    expect(page.get_by_role("button", name="Change password")).to_be_hidden()
