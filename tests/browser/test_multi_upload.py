"""The upload area with several files: a DDP pair as one multi-rank trace, the same pair as
separate traces beside a file the API refuses, a wrong file in a multi-rank drop, and files
the API accepts whose parse then fails.

Every check of what was stored compares with the raw files (`distributedInfo.rank`, read
here with json) through the API, not with what the page says.
"""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from playwright.sync_api import FilePayload, Locator, Page, expect

if TYPE_CHECKING:
    from tests.browser.conftest import PageErrors, Server

pytestmark = [pytest.mark.browser, pytest.mark.integration]

REPO = Path(__file__).resolve().parents[2]
DDP = sorted((REPO / "tests" / "data" / "ddp").glob("ddp_rank*.pt.trace.json.gz"))
AREA = "#traces-upload"
FILES = f"{AREA} .upload-files-input"
READY_MS = 90_000


def _raw_ranks() -> dict[str, int]:
    return {
        p.name: json.loads(gzip.decompress(p.read_bytes()))["distributedInfo"]["rank"] for p in DDP
    }


def _trace(server: Server, trace_id: str) -> dict[str, Any]:
    trace: dict[str, Any] = httpx.get(
        f"{server.base_url}/api/v1/traces/{trace_id}", timeout=10
    ).json()
    return trace


def _kernel_ranks(server: Server, trace_id: str) -> list[int]:
    """The ranks the trace's GPU kernels carry, asked of its events with SQL."""
    sql = "SELECT DISTINCT rank FROM kernels ORDER BY rank"
    url = f"{server.base_url}/api/v1/traces/{trace_id}/query"
    answer = httpx.post(url, json={"sql": sql}, timeout=30)
    assert answer.status_code == 200, answer.text
    return [row[0] for row in answer.json()["rows"]]


def _drop(page: Page, files: list[tuple[str, bytes]]) -> None:
    """A real drop event carrying a DataTransfer of Files, as a drag from the desktop makes."""
    payload = [(name, base64.b64encode(data).decode()) for name, data in files]
    transfer = page.evaluate_handle(
        """(files) => {
            const dt = new DataTransfer();
            for (const [name, b64] of files) {
                const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
                dt.items.add(new File([bytes], name));
            }
            return dt;
        }""",
        payload,
    )
    page.dispatch_event(f"{AREA} .upload-box", "drop", {"dataTransfer": transfer})


def test_a_ddp_pair_becomes_one_trace_with_both_ranks(
    module_server: Server, page: Page, page_errors: PageErrors
) -> None:
    page.goto(module_server.base_url + "/")
    page.set_input_files(FILES, DDP)
    expect(page.locator(f"{AREA} .upload-file")).to_have_count(2)
    # Files named rank<N> are taken for ranks of one job; the name is their common stem.
    expect(page.locator(f"{AREA} input[value=ranks]")).to_be_checked()
    expect(page.locator(f"{AREA} .upload-name")).to_have_value("ddp")
    page.fill(f"{AREA} .upload-project", "ddp-runs")
    page.click(f"{AREA} .upload-send")

    result = page.locator(f"{AREA} .upload-result")
    expect(result).to_have_attribute("data-status", "ready", timeout=READY_MS)
    expect(result).to_contain_text("2 ranks")
    expect(page.locator(f"{AREA} .upload-file[data-status=ready]")).to_have_count(2)
    trace_id = str(result.get_attribute("data-trace-id"))
    trace = _trace(module_server, trace_id)
    assert (trace["name"], trace["project"]) == ("ddp", "ddp-runs")
    assert _kernel_ranks(module_server, trace_id) == sorted(_raw_ranks().values())
    by_file = {r["file"]: r["rank"] for r in trace["meta"]["ranks"]}
    assert by_file == _raw_ranks()
    page.screenshot(path=REPO / "test-artifacts" / "upload_multirank.png", full_page=True)
    assert page_errors.messages == []


def test_separate_traces_go_one_by_one_and_a_refused_file_says_why_beside_it(
    module_server: Server, page: Page, page_errors: PageErrors
) -> None:
    page.goto(module_server.base_url + "/")
    ranks = [
        FilePayload(name=p.name, mimeType="application/gzip", buffer=p.read_bytes()) for p in DDP
    ]
    empty = FilePayload(name="empty.json", mimeType="application/json", buffer=b"")
    page.set_input_files(FILES, [ranks[0], empty, ranks[1]])
    page.check(f"{AREA} input[value=separate]")
    expect(page.locator(f"{AREA} .upload-name")).to_be_disabled()
    page.click(f"{AREA} .upload-send")

    expect(page.locator(AREA)).to_have_attribute("data-state", "done", timeout=30_000)
    bad = page.locator(f'{AREA} .upload-file[data-file="empty.json"]')
    expect(bad).to_have_attribute("data-status", "error")
    expect(bad.locator(".upload-error")).to_contain_text("empty")
    results = page.locator(f"{AREA} .upload-result")
    expect(results).to_have_count(2)
    for k in range(2):
        expect(results.nth(k)).to_have_attribute("data-status", "ready", timeout=READY_MS)
    stored = {}
    for k, path in enumerate(DDP):
        expect(results.nth(k)).to_contain_text(path.name)
        trace_id = str(results.nth(k).get_attribute("data-trace-id"))
        assert _trace(module_server, trace_id)["name"] == path.name
        stored[path.name] = _kernel_ranks(module_server, trace_id)
    assert stored == {name: [rank] for name, rank in _raw_ranks().items()}
    page.screenshot(path=REPO / "test-artifacts" / "upload_separate.png", full_page=True)
    assert page_errors.messages == []


def test_a_wrong_file_dropped_with_a_rank_is_named_and_nothing_is_stored(
    module_server: Server, page: Page, page_errors: PageErrors
) -> None:
    base = module_server.base_url
    before = httpx.get(f"{base}/api/v1/traces", timeout=10).json()["count"]
    page.goto(base + "/")
    _drop(page, [(DDP[0].name, DDP[0].read_bytes()), ("loss.csv", b"step,loss\n1,0.5\n")])
    expect(page.locator(f"{AREA} .upload-file")).to_have_count(2)
    page.check(f"{AREA} input[value=ranks]")
    page.click(f"{AREA} .upload-send")

    wrong = page.locator(f'{AREA} .upload-file[data-file="loss.csv"]')
    expect(wrong.locator(".upload-error")).to_contain_text("not a torch.profiler trace")
    good = page.locator(f'{AREA} .upload-file[data-file="{DDP[0].name}"]')
    expect(good).to_have_attribute("data-status", "not-sent")
    expect(page.locator(f"{AREA} .upload-summary .notice-error")).to_contain_text("loss.csv")
    assert httpx.get(f"{base}/api/v1/traces", timeout=10).json()["count"] == before
    page.locator(AREA).screenshot(path=REPO / "test-artifacts" / "upload_wrong_rank.png")
    # The files stay staged: the wrong one can be left out and the rest sent again.
    expect(page.locator(AREA)).to_have_attribute("data-state", "staged")
    wrong.get_by_role("button", name="Remove loss.csv").click()
    expect(page.locator(f"{AREA} .upload-file")).to_have_count(1)
    expect(page.locator(f"{AREA} .upload-send")).to_be_enabled()
    assert page_errors.messages == []


def test_a_run_folder_is_walked_and_its_non_trace_files_are_named(
    module_server: Server, page: Page, page_errors: PageErrors
) -> None:
    """A whole run folder (two rank files, a README and a JSON of expectations) picked
    with the folder picker, sent as ranks: the two extra files are named, and once they
    are removed the rank files are left staged under their folder paths."""
    folder = DDP[0].parent
    extra = sorted(p.name for p in folder.iterdir() if p not in DDP)
    page.goto(module_server.base_url + "/")
    page.set_input_files(f"{AREA} .upload-folder-input", folder)
    rows = page.locator(f"{AREA} .upload-file")
    expect(rows).to_have_count(len(DDP) + len(extra))
    expect(page.locator(f"{AREA} .upload-file-name").first).to_contain_text(f"{folder.name}/")
    page.check(f"{AREA} input[value=ranks]")
    page.click(f"{AREA} .upload-send")
    for name in extra:
        row = page.locator(f'{AREA} .upload-file[data-file="{name}"]')
        expect(row.locator(".upload-error")).to_contain_text("not a torch.profiler trace")
        row.get_by_role("button", name=f"Remove {folder.name}/{name}").click()
    expect(rows).to_have_count(len(DDP))
    expect(page.locator(f"{AREA} .upload-name")).to_have_value("ddp")
    assert page_errors.messages == []


def test_files_whose_parse_fails_say_failed_in_red_with_the_api_error(
    module_server: Server, page: Page, page_errors: PageErrors, artifacts: Path
) -> None:
    """Accepted files (202) whose parse fails later: a text file, and a rank file cut in
    half. Their rows and summary lines turn red with the error the API gives (as text, no
    Python bytes repr) and offer no trace to open; the good file beside them is ready."""
    base = module_server.base_url
    whole = DDP[1].read_bytes()
    cut = whole[: len(whole) // 2]
    files = [
        FilePayload(name=DDP[0].name, mimeType="application/gzip", buffer=DDP[0].read_bytes()),
        FilePayload(name="notes.json", mimeType="application/json", buffer=b"just some notes\n"),
        FilePayload(name="cut.pt.trace.json.gz", mimeType="application/gzip", buffer=cut),
    ]  # fmt: skip
    page.goto(base + "/")
    page.set_input_files(FILES, files)
    page.check(f"{AREA} input[value=separate]")
    page.click(f"{AREA} .upload-send")

    results = page.locator(f"{AREA} .upload-result")
    expect(results).to_have_count(3, timeout=30_000)
    for name in ("notes.json", "cut.pt.trace.json.gz"):
        line = results.filter(has_text=name)
        expect(line).to_have_attribute("data-status", "failed", timeout=READY_MS)
        error = str(_trace(module_server, str(line.get_attribute("data-trace-id")))["error"])
        assert error and "b'" not in error and 'b"' not in error, error
        expect(line.locator(".upload-result-error")).to_have_text(error)
        expect(line.get_by_role("link")).to_have_count(0)
        row = page.locator(f'{AREA} .upload-file[data-file="{name}"]')
        expect(row).to_have_attribute("data-status", "failed")
        expect(row.locator(".upload-file-status")).to_have_text("failed")
        expect(row.locator(".upload-error")).to_have_text(error)
        expect(row.get_by_role("link")).to_have_count(0)
        assert _color(row, ".progress-fill") == _color(row, ".upload-file-status") == RED
    expect(results.filter(has_text="notes.json")).to_contain_text("it starts with 'just some notes")
    good = results.filter(has_text=DDP[0].name)
    expect(good).to_have_attribute("data-status", "ready", timeout=READY_MS)
    expect(good.get_by_role("link", name="Open the trace →")).to_have_count(1)
    good_row = page.locator(f'{AREA} .upload-file[data-file="{DDP[0].name}"]')
    assert _color(good_row, ".progress-fill") == GREEN
    page.locator(AREA).screenshot(path=artifacts / "upload_failed_parse.png")

    # The list keeps the failed traces, marked failed with the same error.
    page.goto(base + "/?status=failed")
    failed_rows = page.locator("#traces-table tr[data-status=failed]")
    expect(failed_rows.filter(has_text="notes.json")).to_contain_text("not a trace perfdash")
    expect(failed_rows.filter(has_text="notes.json").locator(".badge")).to_have_text("failed")
    page.locator(".card").last.screenshot(path=artifacts / "traces_list_failed.png")
    assert page_errors.messages == []


RED, GREEN = "rgb(201, 42, 42)", "rgb(43, 138, 62)"  # --bad and --ok of style.css


def _color(row: Locator, part: str) -> str:
    """The computed colour of a part of an upload row: a bar's fill, or a text's colour."""
    prop = "backgroundColor" if "progress" in part else "color"
    return str(row.locator(part).evaluate(f"(e) => getComputedStyle(e).{prop}"))
