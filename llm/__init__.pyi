"""The public names of ragcourt.llm (see __init__.py)."""

from .client import (
    LLMClient,
    StructuredResult,
)
from .factory import (
    build_client,
)
from .limits import (
    LimiterRegistry,
)
from .local import (
    LocalModelError,
    check_local_runtime,
)
from .reply import (
    TokenLogprob,
)
from .spec import (
    ModelSpec,
    Provider,
)
from .usage import (
    UsageMeter,
)

__all__ = [
    "build_client",
    "check_local_runtime",
    "LimiterRegistry",
    "LLMClient",
    "LocalModelError",
    "ModelSpec",
    "Provider",
    "StructuredResult",
    "TokenLogprob",
    "UsageMeter",
]
