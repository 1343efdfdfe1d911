"""Signing in through the form as a person would, with `PERFDASH_AUTH=password`.

An uploader signs in, sees their name and role in the navbar, uploads a trace through
the page (a Dash callback that the API only accepts with the session's CSRF token, which
the dashboard forwards) and sees it listed; they log out; a viewer then signs in and is
shown the API's refusal instead of an upload. Session cookies keep their default
`Secure` flag: Chromium sends them to http://127.0.0.1 (a secure context).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import perfdash

if TYPE_CHECKING:
    from tests.browser.conftest import PageErrors, Server

pytestmark = [pytest.mark.browser, pytest.mark.integration]

REPO = Path(__file__).resolve().parents[2]
TRACE = REPO / "tests" / "data" / "torch" / "h200_train_step.pt.trace.json.gz"
FILE_INPUT = "#traces-upload .upload-files-input"
SEND = "#traces-upload .upload-send"
PASSWORD = "a long test password"


def _sign_in(page: Page, server: Server, username: str) -> None:
    page.goto(server.base_url + "/")
    expect(page).to_have_url(f"{server.base_url}/login?next=%2F")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(server.base_url + "/")
    expect(page.locator(".nav-user-name")).to_have_text(username)


def test_uploader_uploads_and_viewer_is_refused(
    serve_with: Callable[..., Server], page: Page, page_errors: PageErrors, artifacts: Path
) -> None:
    server = serve_with("--no-worker", auth="password", scrypt_n="1024")
    for name, role in (("ada", "uploader"), ("vic", "viewer")):
        perfdash(server, "user", "add", name, "--role", role, "--password-env", "PW", PW=PASSWORD)

    page.goto(server.base_url + "/login")
    page.get_by_label("Username").fill("ada")
    page.get_by_label("Password").fill("not the password")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_have_text("wrong username or password")

    _sign_in(page, server, "ada")
    expect(page.locator(".nav-user-role")).to_have_text("uploader")
    cookies = {c["name"]: c for c in page.context.cookies()}
    assert cookies["perfdash_session"]["httpOnly"] and cookies["perfdash_session"]["secure"]
    assert cookies["perfdash_session"]["sameSite"] == "Lax"
    assert not cookies["_csrf_token"]["httpOnly"]
    page.set_input_files(FILE_INPUT, TRACE)
    page.click(SEND)
    expect(page.locator("#traces-upload .upload-result")).to_contain_text(TRACE.name)
    row = page.locator("#traces-table tr", has_text=TRACE.name)
    expect(row).to_have_count(1, timeout=15_000)
    page.screenshot(path=artifacts / "login_uploader.png", full_page=True)

    page.get_by_role("button", name="Log out").click()
    expect(page).to_have_url(server.base_url + "/login")
    assert "perfdash_session" not in {c["name"] for c in page.context.cookies()}

    _sign_in(page, server, "vic")
    expect(page.locator(".nav-user-role")).to_have_text("viewer")
    expect(page.locator("#traces-table tr", has_text=TRACE.name)).to_have_count(1)
    page.set_input_files(
        FILE_INPUT, REPO / "tests" / "data" / "torch" / "h200_gpt_small.pt.trace.json.gz"
    )
    page.click(SEND)
    refusal = page.locator("#traces-upload .upload-file .upload-error")
    expect(refusal).to_contain_text("the uploader role is needed; user 'vic' is a viewer")
    page.screenshot(path=artifacts / "login_viewer_refused.png", full_page=True)
    assert page_errors.messages == []

    # The session ends while the page is open: its next poll is refused, and the page
    # goes to the sign-in form rather than freezing.
    perfdash(server, "user", "disable", "vic")
    expect(page).to_have_url(f"{server.base_url}/login?next=%2F", timeout=15_000)
