"""The web app: review desk, live progress and the report of one run (FastAPI, served by uvicorn).

Pages are rendered on the server with Jinja2 autoescaping; the only script is /static/*.js (CSP
`script-src 'self'`), which reads the page and never writes HTML (textContent only).
"""

from __future__ import annotations

import json
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from jinja2 import Environment, FileSystemLoader, StrictUndefined

from ragcourt.runs.api import Workspace
from ragcourt.report.data import collect
from ragcourt.report.html import content_security_policy, num, render_report, verdict_text
from ragcourt.report.sections import method_sections
from ragcourt.runs.rescore import arescore_run
from ragcourt.stores.records import RecordStore
from ragcourt.web.desk import (
    Choice,
    DecisionError,
    NotPendingError,
    UnknownCheckError,
    decide,
    next_item,
    parse_choice,
    queue_state,
)
from ragcourt.web.highlight import highlight
from ragcourt.web.progress import progress
from ragcourt.web.rescorer import Replay, Rescorer
from ragcourt.web.security import (
    AUTH_COOKIE,
    CSRF_FIELD,
    CSRF_HEADER,
    PAGE_CSP,
    SAFE_METHODS,
    SECURITY_HEADERS,
    SESSION_COOKIE,
    AccessPolicy,
    Session,
    Sessions,
    same_origin,
)

HERE = Path(__file__).parent
MAX_REVIEWER_CHARS, MAX_COMMENT_CHARS = 100, 2000  # as the desk's form says
MAX_FORM_BYTES = 64 * 1024


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


def _form(body: bytes) -> dict[str, str]:
    return {key: values[-1] for key, values in parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True).items()}


def _media_types(header: str | None) -> set[str]:
    return {part.split(";", 1)[0].strip().lower() for part in (header or "").split(",")}


def _json_fields(body: bytes) -> dict[str, str]:
    """A JSON object of the form's fields; a number (a score) is taken as its text. ValueError otherwise."""
    try:
        found = json.loads(body)
    except (ValueError, RecursionError):  # RecursionError: nested too deep
        raise ValueError("the body is not JSON") from None
    if not isinstance(found, dict):
        raise ValueError("the body is not a JSON object of the decision's fields")
    fields: dict[str, str] = {}
    for key, value in found.items():
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise ValueError(f"field '{key}' is not a string or a number")
        fields[key] = str(value)
    return fields


def _decision_refused(error: ValueError) -> JSONResponse:
    """A refused decision for a script: 404 unknown check, 409 not a pending escalation, 422 a wrong value."""
    field = error.field if isinstance(error, DecisionError) else None
    body: dict[str, object] = {"error": str(error), "field": field, "stored": False}
    if isinstance(error, UnknownCheckError):
        status = 404
    elif isinstance(error, NotPendingError):
        status = 409
        if error.review is not None:
            body["decided"] = error.review.model_dump(mode="json")
    else:
        status = 422
    return JSONResponse(body, status_code=status)


def create_app(settings: DeskSettings, *, replay: Replay = arescore_run) -> FastAPI:
    """The app for one run. The store opens when the app starts and closes when it stops."""
    policy = AccessPolicy(settings.host, settings.port, settings.token)  # refuses a non-loopback bind without token
    workspace = Workspace(settings.home)
    if not workspace.store_path.exists():
        raise FileNotFoundError(f"no record store at {workspace.store_path}")
    with workspace.open_store() as found:  # an unknown run fails here, not as a traceback in the server's startup
        if found.get_run(settings.run_id) is None:
            raise LookupError(f"no run '{settings.run_id}' in {workspace.store_path}")
    run_dir = workspace.run_dir(settings.run_id)
    sessions = Sessions()
    templates = _templates()
    holder: dict[str, RecordStore | Rescorer] = {}

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        store = workspace.open_store()
        if store.get_run(settings.run_id) is None:
            store.close()
            raise LookupError(f"no run '{settings.run_id}' in {workspace.store_path}")
        holder["store"], holder["rescorer"] = store, Rescorer(store, settings.run_id, run_dir, replay)
        try:
            yield
        finally:
            rescorer = holder["rescorer"]
            assert isinstance(rescorer, Rescorer)
            await rescorer.close()
            store.close()

    app = FastAPI(title="ragcourt desk", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    app.state.settings = settings
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")

    def store() -> RecordStore:
        found = holder["store"]
        assert isinstance(found, RecordStore)
        return found

    def rescorer() -> Rescorer:
        found = holder["rescorer"]
        assert isinstance(found, Rescorer)
        return found

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

    def _session(request: Request) -> Session:
        return request.state.session

    def _api_client(request: Request) -> bool:
        """Not a browser form: the bearer token, a JSON body, or a client asking for JSON. It gets a real status
        and a JSON body; a browser form gets 303 back to the desk with a flash message."""
        return bool(request.state.bearer) or "application/json" in (
            _media_types(request.headers.get("content-type")) | _media_types(request.headers.get("accept")))

    def _csrf_ok(request: Request, form: dict[str, str]) -> bool:
        if request.state.bearer:
            return True
        return _session(request).csrf_matches(form.get(CSRF_FIELD) or request.headers.get(CSRF_HEADER))

    @app.get("/")
    async def home() -> Response:
        return RedirectResponse("/desk", status_code=303)

    @app.get("/desk", response_class=HTMLResponse)
    def desk(request: Request) -> HTMLResponse:
        session = _session(request)
        item = next_item(store(), settings.run_id, session.skipped)
        queue = item.queue if item else queue_state(store(), settings.run_id, session.skipped)
        flash, session.flash = session.flash, ""
        html = templates.get_template("desk.html.j2").render(
            run_id=settings.run_id, item=item, queue=queue, session=session, flash=flash,
            rescore=rescorer(), csrf_field=CSRF_FIELD,
        )
        return HTMLResponse(html)

    @app.post("/desk/decide")
    async def decide_page(request: Request) -> Response:
        """A decision on a pending escalation. A browser form is sent back to the desk (303, a refusal shown as
        the page's message); a script (bearer token or JSON) gets 201 and the stored decision, or 404, 409 or
        422 with the refused field, and nothing is stored."""
        api = _api_client(request)

        def refused(status: int, message: str, field: str | None = None) -> Response:
            if api:
                return JSONResponse({"error": message, "field": field, "stored": False}, status_code=status)
            return PlainTextResponse(message, status)

        body = await request.body()
        if len(body) > MAX_FORM_BYTES:
            return refused(413, "form too large")
        if "application/json" in _media_types(request.headers.get("content-type")):
            try:
                form = _json_fields(body)
            except ValueError as error:
                return refused(400, str(error))
        else:
            form = _form(body)
        if not _csrf_ok(request, form):
            return refused(403, "CSRF token missing or wrong: reload the desk", CSRF_FIELD)
        session = _session(request)
        reviewer, comment = form.get("reviewer", session.reviewer).strip(), form.get("comment", "")
        try:
            if len(reviewer) > MAX_REVIEWER_CHARS:  # the browser's limits, enforced
                raise DecisionError(f"a reviewer name has at most {MAX_REVIEWER_CHARS} characters", "reviewer")
            if len(comment) > MAX_COMMENT_CHARS:
                raise DecisionError(f"a comment has at most {MAX_COMMENT_CHARS} characters", "comment")
            session.reviewer = reviewer
            choice, value = parse_choice(form.get("decision", ""))
            if choice is Choice.SCORE:
                value = form.get("score", value)  # the form's score field; a script may send decision=score:N
            check, review = decide(store(), settings.run_id, form.get("check_id", "").strip(), session.reviewer,
                                   choice, value, comment)
        except ValueError as error:  # DecisionError, or a review the schema refuses
            if api:
                return _decision_refused(error)
            session.flash = str(error)
            return RedirectResponse("/desk", status_code=303)
        if choice is Choice.SKIP:
            session.skipped.add(review.check_id)
        else:
            rescorer().request()
        if not api:
            return RedirectResponse("/desk", status_code=303)
        queue = queue_state(store(), settings.run_id, session.skipped)
        return JSONResponse({**review.model_dump(mode="json"), "stored": True, "decision": str(choice),
                             "kind": str(check.kind), "sample_id": check.sample_id,
                             "rescore_requested": choice is not Choice.SKIP,
                             "queue": {"escalated": queue.escalated, "pending": queue.pending,
                                       "decided": queue.decided}}, status_code=201)

    @app.get("/api/desk")
    def desk_state(request: Request) -> JSONResponse:
        skipped = _session(request).skipped
        queue = queue_state(store(), settings.run_id, skipped)
        next_check = next((r.check_id for r in store().pending_escalations(settings.run_id)
                           if r.check_id not in skipped), None)
        return JSONResponse({"run_id": settings.run_id, "escalated": queue.escalated, "pending": queue.pending,
                             "decided": queue.decided, "skipped": queue.skipped, "next_check_id": next_check,
                             "rescore": rescorer().state.value, "rescore_detail": rescorer().detail,
                             "replays": rescorer().replays})

    @app.get("/progress", response_class=HTMLResponse)
    def progress_page() -> HTMLResponse:
        return HTMLResponse(templates.get_template("progress.html.j2").render(run_id=settings.run_id))

    @app.get("/api/progress")
    def progress_state() -> JSONResponse:
        found = progress(store(), settings.run_id, run_dir)
        return JSONResponse({**found.as_json(), "rescore": rescorer().state.value})

    @app.get("/report", response_class=HTMLResponse)
    def report() -> HTMLResponse:
        nonce = secrets.token_urlsafe(16)
        data = collect(store(), settings.run_id)
        html = render_report(data, method_sections(store(), data), nonce=nonce)
        return HTMLResponse(html, headers={"Content-Security-Policy": content_security_policy(nonce)})

    return app


def _secured(response: Response) -> Response:
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
    response.headers.setdefault("Content-Security-Policy", PAGE_CSP)
    return response
