"""Whether an endpoint can answer at all, asked once before a run, and the short cause of a failed call.

A run whose server is down, whose key is missing or refused would otherwise "succeed" with every verdict
unscored. `probe` asks each endpoint one cheap question before the first sample:

    | spec                 | what is asked                       | a failure                                      |
    |----------------------|-------------------------------------|------------------------------------------------|
    | openai:...[@URL]     | GET {base_url}/models, with the key | no key for api.openai.com; connection refused, |
    |                      | the calls would send                | DNS failure, timeout, TLS error, 401, 403      |
    | local[:PATH.gguf]    | nothing: llm.local.check_local_runtime | llama-cpp-python, the file or the package    |
    | local:BUNDLED_NAME   |                                     | that installs it is missing                    |

Any other HTTP status passes: some OpenAI-compatible servers have no /models route (404, 405) or answer it
oddly, and the server answered, which is all this asks. The cause is said as llm.failures.cause_of says
it in an unscored verdict's detail ("connection refused", "401 Unauthorized", ...).
"""

from __future__ import annotations

from dataclasses import dataclass

import httpx

from ragcourt.llm.factory import API_KEY_ENV, MissingAPIKeyError, api_key_for
from ragcourt.llm.failures import cause_of, status_words
from ragcourt.llm.local import LocalModelError, check_local_runtime
from ragcourt.llm.spec import ModelSpec, Provider

PROBE_TIMEOUT_S = 5.0  # a server that cannot list its models in 5 s is not ready for a run's calls either
REFUSING_STATUSES = frozenset({401, 403})  # the server answered, and said this key will not do


@dataclass(frozen=True)
class EndpointFailure:
    user: str  # who calls it: "judge 'j'", "decomposer", "judge 'a' and answerer"
    url: str  # what was asked (for a local model, its file or spec)
    cause: str

    def __str__(self) -> str:
        return f"{self.user} cannot use {self.url}: {self.cause}"


class EndpointUnavailableError(RuntimeError):
    """Configured endpoints that cannot answer: one line each, naming who uses it, the URL and the cause."""

    def __init__(self, failures: tuple[EndpointFailure, ...]) -> None:
        self.failures = failures
        super().__init__("\n".join(map(str, failures)))


def static_failure(spec: ModelSpec) -> tuple[str, str] | None:
    """(what is missing, why) without a request: a local model's runtime or file, api.openai.com's key."""
    if spec.provider is Provider.LOCAL:
        try:
            check_local_runtime(spec)
        except (LocalModelError, FileNotFoundError) as error:
            return spec.id, str(error)
        return None
    try:
        api_key_for(spec, None)
    except MissingAPIKeyError:
        return spec.endpoint, f"no API key: set {API_KEY_ENV}"
    return None


async def probe(spec: ModelSpec, *, timeout_s: float = PROBE_TIMEOUT_S) -> tuple[str, str] | None:
    """(the URL asked, the cause) when the endpoint cannot answer, None when it can; one GET of
    {base_url}/models for an `openai:` spec, no request for a local one. Never raises for the endpoint's faults."""
    missing = static_failure(spec)
    if missing is not None or spec.provider is Provider.LOCAL:
        return missing
    url = f"{spec.endpoint}/models"
    try:
        async with httpx.AsyncClient(timeout=timeout_s) as client:
            response = await client.get(url, headers={"Authorization": f"Bearer {api_key_for(spec, None)}"})
    except httpx.HTTPError as error:
        return url, cause_of(error) or f"{type(error).__name__}: {error}"
    return (url, status_words(response.status_code)) if response.status_code in REFUSING_STATUSES else None
