"""The review desk's routes: the desk page, decisions (from its form or from a script) and the queue state."""

from __future__ import annotations

import json
from urllib.parse import parse_qs

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response

from ragcourt.schema.review_questions import accepting_keeps, provisional_text, review_question
from ragcourt.validity.review_budget import review_queue
from ragcourt.web.context import DeskContext
from ragcourt.web.desk import (
    Choice,
    DecisionError,
    NotPendingError,
    UnknownCheckError,
    decide,
    next_check_id,
    next_item,
    parse_choice,
    queue_state,
)
from ragcourt.web.security import CSRF_FIELD, CSRF_HEADER, Session

MAX_REVIEWER_CHARS, MAX_COMMENT_CHARS = 100, 2000  # as the desk's form says
MAX_FORM_BYTES = 64 * 1024


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


def desk_router(run: DeskContext) -> APIRouter:
    """`/` (to the desk), `/desk`, `/desk/decide` and `/api/desk` of the run. The app's guard has set the
    request's session and bearer state before any of them runs."""
    router = APIRouter()

    @router.get("/")
    async def home() -> Response:
        return RedirectResponse("/desk", status_code=303)

    @router.get("/desk", response_class=HTMLResponse)
    def desk(request: Request) -> HTMLResponse:
        session = _session(request)
        item = next_item(run.store(), run.run_id, session.skipped)
        queue = item.queue if item else queue_state(run.store(), run.run_id, session.skipped)
        flash, session.flash = session.flash, ""
        html = run.templates.get_template("desk.html.j2").render(
            run_id=run.run_id, item=item, queue=queue, session=session, flash=flash,
            rescore=run.rescorer(), csrf_field=CSRF_FIELD,
            # what the reviewer is asked, and what the jury's provisional decision is (kept by some accepts)
            asked=review_question(item.check.kind) if item else None,
            provisional=provisional_text(item.reconciled) if item else "", accepting_keeps=accepting_keeps,
        )
        return HTMLResponse(html)

    @router.post("/desk/decide")
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
            check, review = decide(run.store(), run.run_id, form.get("check_id", "").strip(), session.reviewer,
                                   choice, value, comment)
        except ValueError as error:  # DecisionError, or a review the schema refuses
            if api:
                return _decision_refused(error)
            session.flash = str(error)
            return RedirectResponse("/desk", status_code=303)
        if choice is Choice.SKIP:
            session.skipped.add(review.check_id)
        else:
            run.rescorer().request()
        if not api:
            return RedirectResponse("/desk", status_code=303)
        queue = queue_state(run.store(), run.run_id, session.skipped)
        return JSONResponse({**review.model_dump(mode="json"), "stored": True, "decision": str(choice),
                             "kind": str(check.kind), "sample_id": check.sample_id,
                             "rescore_requested": choice is not Choice.SKIP,
                             "queue": {"escalated": queue.escalated, "pending": queue.pending,
                                       "decided": queue.decided}}, status_code=201)

    @router.get("/api/desk")
    def desk_state(request: Request) -> JSONResponse:
        skipped = _session(request).skipped
        queue = queue_state(run.store(), run.run_id, skipped)
        next_check = next_check_id(review_queue(run.store(), run.run_id), skipped)  # the item the desk page shows
        return JSONResponse({"run_id": run.run_id, "escalated": queue.escalated, "pending": queue.pending,
                             "decided": queue.decided, "skipped": queue.skipped, "next_check_id": next_check,
                             "rescore": run.rescorer().state.value, "rescore_detail": run.rescorer().detail,
                             "replays": run.rescorer().replays})

    return router
