"""The check every command that calls an LLM makes before its first call: `run` has made it since issue 20;
rerun, calibrate, rank and noise make it too (issue 36), so none of them reports figures made of unscored
verdicts ("Elo 1500" for every system, "undecided 40") after minutes of retries against a dead server."""

from __future__ import annotations

import asyncio

from ragcourt.commands.output import fail
from ragcourt.llm.probe import EndpointFailure, EndpointUnavailableError, probe, static_failure
from ragcourt.llm.spec import ModelSpec
from ragcourt.runs.models import check_endpoints
from ragcourt.schema.config import EvalConfig


def require_endpoints(config: EvalConfig) -> None:
    """Exit 2 with one line per endpoint of `config` that cannot answer (who calls it, the URL, the cause);
    nothing when the configuration calls no LLM (lexical, semantic, sentence rules)."""
    try:
        asyncio.run(check_endpoints(config))
    except EndpointUnavailableError as error:
        fail(str(error))


def require_endpoint(spec: ModelSpec, user: str, *, reach: bool = True) -> None:
    """Exit 2 with one line when the one model a command calls outside a configuration cannot answer (who
    calls it, the URL, the cause); `reach=False` checks only what needs no request (a key, a model file)."""
    failure = asyncio.run(probe(spec)) if reach else static_failure(spec)
    if failure is not None:
        fail(str(EndpointFailure(user, *failure)))
