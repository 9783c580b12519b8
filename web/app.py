"""The web app: review desk, live progress and the report of one run (FastAPI, served by uvicorn).

Pages are rendered on the server with Jinja2 autoescaping; the only script is /static/*.js (CSP
`script-src 'self'`), which reads the page and never writes HTML (textContent only).

This module builds the app: the run's store and rescorer (opened by the lifespan), the static files, the
guard every request passes (host, token, session, same origin, security headers), and the routers by
concern: web/desk_routes.py, web/progress_routes.py and web/report_routes.py.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import PlainTextResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from jinja2 import Environment, FileSystemLoader, StrictUndefined

from ragcourt.report.html import num, verdict_text
from ragcourt.runs.rescore import arescore_run
from ragcourt.runs.workspace import Workspace
from ragcourt.web.context import DeskContext
from ragcourt.web.desk_routes import desk_router
from ragcourt.web.highlight import highlight
from ragcourt.web.progress_routes import progress_router
from ragcourt.web.report_routes import report_router
from ragcourt.web.rescorer import Replay, Rescorer
from ragcourt.web.security import (
    AUTH_COOKIE,
    PAGE_CSP,
    SAFE_METHODS,
    SECURITY_HEADERS,
    SESSION_COOKIE,
    AccessPolicy,
    Sessions,
    same_origin,
)

HERE = Path(__file__).parent


@dataclass(frozen=True)
class DeskSettings:
    home: Path
    run_id: str
    host: str = "127.0.0.1"
    port: int = 8765
    token: str | None = None
    reviewer: str = ""  # prefilled reviewer name; each person can change it on the desk


def _templates() -> Environment:
    env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=True, undefined=StrictUndefined,
                      trim_blocks=True, lstrip_blocks=True)
    env.filters["num"] = num
    env.globals.update(highlight=highlight, verdict_text=verdict_text)
    return env


def create_app(settings: DeskSettings, *, replay: Replay = arescore_run) -> FastAPI:
    """The app for one run. The store opens when the app starts and closes when it stops."""
    policy = AccessPolicy(settings.host, settings.port, settings.token)  # refuses a non-loopback bind without token
    workspace = Workspace(settings.home)
    if not workspace.has_store():
        raise FileNotFoundError(f"no record store at {workspace.store_path}")
    with workspace.open_store() as found:  # an unknown run fails here, not as a traceback in the server's startup
        if found.get_run(settings.run_id) is None:
            raise LookupError(f"no run '{settings.run_id}' in {workspace.store_path}")
    run = DeskContext(settings.run_id, workspace.run_dir(settings.run_id), _templates())
    sessions = Sessions()

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        store = workspace.open_store()
        if store.get_run(settings.run_id) is None:
            store.close()
            raise LookupError(f"no run '{settings.run_id}' in {workspace.store_path}")
        run.holder["store"], run.holder["rescorer"] = store, Rescorer(store, settings.run_id, run.run_dir, replay)
        try:
            yield
        finally:
            await run.rescorer().close()
            store.close()

    app = FastAPI(title="ragcourt desk", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    app.state.settings = settings
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")

    @app.middleware("http")
    async def guard(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        host = request.headers.get("host")
        if not policy.host_allowed(host):
            return _secured(PlainTextResponse("this desk answers only on the loopback address", 400))
        bearer = policy.bearer_ok(request.headers.get("authorization"))
        new_auth_cookie = False
        if policy.token and not bearer and not policy.token_matches(request.cookies.get(AUTH_COOKIE)):
            if request.method in SAFE_METHODS and policy.token_matches(request.query_params.get("token")):
                new_auth_cookie = True
            else:
                return _secured(PlainTextResponse("a token is required: open the URL with ?token=...", 401))
        session = sessions.get(request.cookies.get(SESSION_COOKIE))
        fresh = session is None
        if session is None:
            session = sessions.new(settings.reviewer, keep=not bearer)
        request.state.session, request.state.bearer = session, bearer
        if request.method not in SAFE_METHODS and not bearer and not same_origin(
                request.headers.get("origin"), request.headers.get("referer"), host):
            return _secured(PlainTextResponse("cross-origin request refused", 403))
        if new_auth_cookie:  # drop the token from the address bar and history
            response: Response = RedirectResponse(request.url.remove_query_params("token").path, status_code=303)
        else:
            response = await call_next(request)
        if new_auth_cookie:
            response.set_cookie(AUTH_COOKIE, settings.token or "", httponly=True, samesite="strict")
        if fresh and not bearer:
            response.set_cookie(SESSION_COOKIE, session.id, httponly=True, samesite="strict")
        return _secured(response)

    for router in (desk_router(run), progress_router(run), report_router(run)):
        app.include_router(router)
    return app


def _secured(response: Response) -> Response:
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
    response.headers.setdefault("Content-Security-Policy", PAGE_CSP)
    return response
