"""The report route: the run's HTML report, rendered from the store on each request."""

from __future__ import annotations

import secrets

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

from ragcourt.report.data import collect
from ragcourt.report.html import content_security_policy, render_report
from ragcourt.report.sections import method_sections
from ragcourt.web.context import DeskContext


def report_router(run: DeskContext) -> APIRouter:
    """`/report` of the run, with its own Content-Security-Policy (a nonce for the report's inline style)."""
    router = APIRouter()

    @router.get("/report", response_class=HTMLResponse)
    def report() -> HTMLResponse:
        nonce = secrets.token_urlsafe(16)
        data = collect(run.store(), run.run_id)
        html = render_report(data, method_sections(run.store(), data), nonce=nonce)
        return HTMLResponse(html, headers={"Content-Security-Policy": content_security_policy(nonce)})

    return router
