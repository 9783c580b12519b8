"""Make the report screenshots in docs/ (headless Debian Chromium via Playwright, offline):

    python docs/screenshots.py [--home /tmp/ragcourt-shots]

It runs `ragcourt demo` into HOME (two configurations, bundled HotpotQA), evaluates 6 of the same questions
with CUE-R perturbations (for the heatmap), writes both reports and screenshots each new picture:
docs/report-glance.png (headline distributions), docs/report-gaps.png (gap attribution per run and subgroup),
docs/report-cuer-heatmap.png, docs/report-table.png (the sortable, filterable per-sample table, filtered and
sorted by the script), docs/report.png (the report's head: run summary, judges and what each judge is worth),
docs/report-question.png (one question's drill-down, opened) and docs/desk.png (the review desk of the demo run,
served on 127.0.0.1 for the shot: the plain-words question of the first escalation)."""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

from ragcourt.data.loaders import BundledDataset, bundled, load_hotpotqa
from ragcourt.report.html import write_report
from ragcourt.runs.api import evaluate, reference_system
from ragcourt.runs.workspace import Workspace
from ragcourt.schema.config import EvalConfig, JudgeSpec, Method

DOCS = Path(__file__).parent
CUER_RUN = "shots-cuer"


def reports(home: Path) -> tuple[Path, Path, str]:
    subprocess.run([sys.executable, "-c", "from ragcourt.cli import main; main()", "demo", "--home", str(home)], check=True,
                   capture_output=True)
    samples = load_hotpotqa(bundled(BundledDataset.HOTPOTQA_DEV_100)).samples[:6]
    config = EvalConfig(judges=(JudgeSpec(model="lexical"), JudgeSpec(model="semantic")), top_k=5,
                        methods=(Method.ELEMENTS, Method.CUER))
    evaluate(samples, reference_system(home=home), config=config, home=home, run_id=CUER_RUN)
    store = Workspace(home).open_store()
    try:
        demo_a = max((r for r in store.list_runs() if r.run_id.startswith("demo-") and r.config.get("top_k") == 5),
                     key=lambda r: r.created_at).run_id
        return (write_report(store, demo_a, home / "demo-a.html"),
                write_report(store, CUER_RUN, home / "cuer.html"), demo_a)
    finally:
        store.close()


def serve_desk(home: Path, run_id: str) -> tuple[str, object]:
    """The review desk of the run on a free loopback port, without a token (a screenshot, not a session)."""
    import uvicorn

    from ragcourt.web.app import DeskSettings, create_app

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(DeskSettings(home=home, run_id=run_id, port=port,
                                                                   reviewer="ann")),
                                           host="127.0.0.1", port=port, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    return f"http://127.0.0.1:{port}/desk", server


def shoot_head_question_desk(page, demo: Path, desk_url: str) -> None:
    page.goto(demo.as_uri())
    bottom = page.evaluate("""() => {
        const end = document.querySelector("#jury") ? document.querySelector("#summary-jury").closest(".scroll")
                                                      .nextElementSibling : document.querySelector("#summary table");
        return end.getBoundingClientRect().bottom + window.scrollY;
    }""")
    page.screenshot(path=DOCS / "report.png", full_page=True,
                    clip={"x": 0, "y": 0, "width": 1280, "height": bottom + 12})
    question = page.locator("details.sample:has(.tag.warn)").first
    question.locator("summary").click()
    box = question.bounding_box()  # with a margin (the element's own shot cuts its border), at most 1500 px high:
    assert box is not None        # answer, chunks, alignment, elements and the first checks
    page.screenshot(path=DOCS / "report-question.png", full_page=True, clip={
        "x": max(box["x"] - 8, 0), "y": box["y"] + page.evaluate("window.scrollY") - 8,
        "width": box["width"] + 16, "height": min(box["height"] + 16, 1500)})
    page.goto(desk_url)
    page.screenshot(path=DOCS / "desk.png")


def shoot(demo: Path, cuer: Path, demo_run: str, home: Path) -> None:
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(demo.as_uri())
        page.locator("#summary figure").first.screenshot(path=DOCS / "report-glance.png")
        page.locator("#elements figure").nth(1).screenshot(path=DOCS / "report-gaps.png")
        page.fill("input[data-filter='qcare-qcare_per_sample']", "which")
        page.locator("#qcare-qcare_per_sample th", has_text="c_prec").first.click()
        page.locator("#qcare-qcare_per_sample tbody tr:not([hidden]) details.fold").first.locator("summary").click()
        top, bottom = page.evaluate("""() => {
            const filter = document.querySelector("input[data-filter='qcare-qcare_per_sample']").closest("p");
            const table = document.getElementById("qcare-qcare_per_sample");
            return [filter.getBoundingClientRect().top + window.scrollY,
                    table.getBoundingClientRect().bottom + window.scrollY];
        }""")
        page.screenshot(path=DOCS / "report-table.png", full_page=True,
                        clip={"x": 0, "y": top - 8, "width": 1280, "height": min(bottom - top + 16, 800)})
        page.goto(cuer.as_uri())
        page.locator("#cuer figure").nth(1).screenshot(path=DOCS / "report-cuer-heatmap.png")
        desk_url, server = serve_desk(home, demo_run)
        try:
            shoot_head_question_desk(page, demo, desk_url)
        finally:
            server.should_exit = True  # type: ignore[attr-defined]
        browser.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, default=Path("/tmp/ragcourt-shots"))
    home = parser.parse_args().home
    shoot(*reports(home), home)
    print("written:", *(str(DOCS / n) for n in ("report-glance.png", "report-gaps.png", "report-table.png",
                                                  "report-cuer-heatmap.png", "report.png", "report-question.png",
                                                  "desk.png")))


if __name__ == "__main__":
    main()
