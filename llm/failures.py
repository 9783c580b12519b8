"""The short cause of a failed LLM call, found in what the error was raised from: the openai SDK says
"Connection error." and keeps "connection refused" three exceptions down, where nobody reading a verdict
would see it."""

from __future__ import annotations

import http
import socket
import ssl

import httpx
import openai

from ragcourt.llm.retry import is_timeout


def _chain(error: BaseException) -> list[BaseException]:
    """The error and what it was raised from (the openai SDK wraps httpx, which wraps the OSError)."""
    seen: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and current not in seen:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def status_words(status: int) -> str:
    try:
        return f"{status} {http.HTTPStatus(status).phrase}"
    except ValueError:
        return f"HTTP {status}"


def cause_of(error: BaseException) -> str | None:
    """The short cause of a failed call ('connection refused', 'DNS lookup failed', 'timed out', 'TLS error',
    'connection reset', '401 Unauthorized', ...), found anywhere in what the error was raised from; None when
    it is none of these (the error's own words are then all there is)."""
    chain = _chain(error)
    for link in chain:
        if isinstance(link, openai.APIStatusError):
            return status_words(link.status_code)
        if isinstance(link, httpx.HTTPStatusError):
            return status_words(link.response.status_code)
    kinds: tuple[tuple[type[BaseException], str], ...] = (
        (ConnectionRefusedError, "connection refused"), (socket.gaierror, "DNS lookup failed"),
        (ConnectionResetError, "connection reset"), (ssl.SSLError, "TLS error"),
    )
    for kind, words in kinds:
        found = next((link for link in chain if isinstance(link, kind)), None)
        if found is not None:
            return f"{words} ({found.strerror or found})" if isinstance(found, socket.gaierror | ssl.SSLError) \
                else words
    if any(is_timeout(link) for link in chain):
        return "timed out"
    return None
