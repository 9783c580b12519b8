"""Who may use the desk, and how state-changing requests are protected.

- Bound to loopback, no token is needed to read; the Host header must name the loopback (a page on
  another site cannot reach the desk through DNS rebinding).
- Bound to any other address, a token is required (`ServeRefused` otherwise) and every request must
  carry it: `Authorization: Bearer <token>`, or once `?token=<token>` has set an HttpOnly cookie.
- A state-changing request passes with the bearer token, or with a CSRF check: the Origin (or Referer)
  is this server and the form carries the session's CSRF token. A cookie alone never passes, since a
  browser sends cookies with cross-site requests too.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from collections import OrderedDict
from dataclasses import dataclass, field
from threading import Lock
from urllib.parse import urlsplit

SESSION_COOKIE = "ragcourt_session"
AUTH_COOKIE = "ragcourt_auth"
CSRF_FIELD = "csrf"
CSRF_HEADER = "x-csrf-token"
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

PAGE_CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
            "form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    # same-origin (not no-referrer): browsers then send a real Origin with form posts, which the CSRF check reads.
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


class ServeRefused(RuntimeError):
    """The server must not start with these settings."""


def is_loopback(host: str) -> bool:
    if host.strip("[]").lower() in {"localhost", "::1"}:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class AccessPolicy:
    host: str
    port: int
    token: str | None = None

    def __post_init__(self) -> None:
        if not is_loopback(self.host) and not self.token:
            raise ServeRefused(
                f"binding to {self.host} (not loopback) requires a token: pass --token or set RAGCOURT_TOKEN"
            )
        if self.token is not None and len(self.token) < 16:
            raise ServeRefused("the token must be at least 16 characters long")

    @property
    def loopback(self) -> bool:
        return is_loopback(self.host)

    def host_allowed(self, host_header: str | None) -> bool:
        """On loopback only loopback names may be in the Host header (no DNS rebinding)."""
        if not self.loopback:
            return True
        if not host_header:
            return False
        name = host_header.rsplit(":", 1)[0] if not host_header.endswith("]") else host_header
        return name.lower() in LOOPBACK_HOSTS

    def token_matches(self, offered: str | None) -> bool:
        return self.token is not None and offered is not None and hmac.compare_digest(
            offered.encode(), self.token.encode())

    def bearer_ok(self, authorization: str | None) -> bool:
        scheme, _, value = (authorization or "").partition(" ")
        return scheme.lower() == "bearer" and self.token_matches(value.strip())


def same_origin(origin: str | None, referer: str | None, host_header: str | None) -> bool:
    """The request comes from a page of this server (Origin, else Referer, names the Host)."""
    if not host_header:
        return False
    source = origin if origin and origin != "null" else referer
    if not source:
        return False
    parts = urlsplit(source)
    return parts.scheme in ("http", "https") and parts.netloc.lower() == host_header.lower()


@dataclass
class Session:
    id: str
    csrf: str
    reviewer: str = ""
    skipped: set[str] = field(default_factory=set)
    flash: str = ""  # one message for the next page, e.g. why a decision was refused

    def csrf_matches(self, offered: str | None) -> bool:
        return offered is not None and hmac.compare_digest(offered.encode(), self.csrf.encode())


class Sessions:
    """Desk sessions in memory: a restart starts new sessions (decisions are in the store).

    Every request without a session cookie opens one (a browser's first visit, a poller, a cross-site page's
    blind requests to 127.0.0.1, which carry no SameSite=Strict cookie). A session becomes established when
    its cookie comes back. Each kind is capped at `limit`, least recently used first, so a flood of new
    sessions can evict only new sessions, never a reviewer's established one.
    """

    def __init__(self, limit: int = 1000) -> None:
        self._new: OrderedDict[str, Session] = OrderedDict()
        self._established: OrderedDict[str, Session] = OrderedDict()
        self._lock = Lock()
        self._limit = limit

    def get(self, session_id: str | None) -> Session | None:
        with self._lock:
            session = self._new.pop(session_id or "", None)
            if session is not None:
                self._keep(self._established, session)
                return session
            session = self._established.get(session_id or "")
            if session is not None:
                self._established.move_to_end(session.id)
            return session

    def new(self, reviewer: str = "", *, keep: bool = True) -> Session:
        """A new session; `keep=False` for a client that sends no cookie back (a script with the bearer token)."""
        session = Session(id=secrets.token_urlsafe(32), csrf=secrets.token_urlsafe(32), reviewer=reviewer)
        if keep:
            with self._lock:
                self._keep(self._new, session)
        return session

    def _keep(self, pool: OrderedDict[str, Session], session: Session) -> None:
        pool[session.id] = session
        while len(pool) > self._limit:
            pool.popitem(last=False)

    def __len__(self) -> int:
        return len(self._new) + len(self._established)
