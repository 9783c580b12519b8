"""The live progress routes: the page and the JSON it polls."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import HTMLResponse, JSONResponse

from ragcourt.web.context import DeskContext
from ragcourt.web.progress import progress


def progress_router(run: DeskContext) -> APIRouter:
    """`/progress` and `/api/progress` of the run (read while another process may be running it)."""
    router = APIRouter()

    @router.get("/progress", response_class=HTMLResponse)
    def progress_page() -> HTMLResponse:
        return HTMLResponse(run.templates.get_template("progress.html.j2").render(run_id=run.run_id))

    @router.get("/api/progress")
    def progress_state() -> JSONResponse:
        found = progress(run.store(), run.run_id, run.run_dir)
        return JSONResponse({**found.as_json(), "rescore": run.rescorer().state.value})

    return router
