"""The composition of a run from its configuration: the LLM clients (one cache, one usage meter, one
limiter per endpoint), the jury, the decomposer and the answerer, and the EvalContext they make up.

Model specs are checked before anything is built (`check_model_specs`; `check_judge_options` for judges named
on the command line, each refused with the nearest built-in judge); the rule-based choices that need no LLM
(`schema.config.NO_LLM_MODELS`) are never parsed as specs. `prepare_run` builds a run for the CLI and the
Python API alike and asks every endpoint once (`check_endpoints`) before the first sample.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import openai

from ragcourt.judging import BaselineJudge, BaselineRule, Judge, LLMJudge
from ragcourt.judging.decomposers import Decomposer, LLMDecomposer, SentenceDecomposer
from ragcourt.llm.factory import build_client
from ragcourt.llm.limits import LimiterRegistry
from ragcourt.llm.probe import (
    PROBE_TIMEOUT_S,
    EndpointFailure,
    EndpointUnavailableError,
    probe,
    static_failure,
)
from ragcourt.llm.spec import SPEC_EXAMPLES, BundledModel, ModelSpec, Provider, did_you_mean
from ragcourt.llm.usage import UsageMeter
from ragcourt.nodes.state import EvalContext
from ragcourt.schema.config import (
    ENCODER_PATTERN,
    LEGACY_ENCODER,
    NO_LLM_MODELS,
    BaselineModel,
    ConfigError,
    EvalConfig,
)
from ragcourt.stores.embeddings import MiniLMEmbedding
from ragcourt.stores.encoders import EncoderChoice
from ragcourt.stores.records import RecordStore
from ragcourt.stores.vectors import VectorStore
from ragcourt.systems import ConfidenceProbe, ExtractiveGenerator, Generator, LLMGenerator, RAGSystem
from ragcourt.validity.profile import apply_profile, learned_judge, load_profile


def _llm_specs(config: EvalConfig) -> list[tuple[str, str, str]]:
    """(configuration key, who calls it, model spec) of every part of the configuration that calls an LLM."""
    named = [(f"judges.{i}.model", f"judge '{j.judge_id}'", j.model) for i, j in enumerate(config.judges)
             if j.model not in NO_LLM_MODELS]
    named += [(key, key.replace("_", " "), value)
              for key, value in (("decomposer", config.decomposer), ("answerer", config.answerer),
                                 ("bounds_generator", config.bounds_generator),
                                 ("confidence_probe", config.confidence_probe))
              if value is not None and value not in NO_LLM_MODELS]
    return named


# The judges named without a model spec: the rules (no LLM) and the bundled local models.
JUDGE_RULES = (BaselineModel.LEXICAL, BaselineModel.SEMANTIC, BaselineModel.LEARNED)
BUILTIN_JUDGES = (*JUDGE_RULES, Provider.LOCAL.value, *(f"{Provider.LOCAL}:{model}" for model in BundledModel))


def judge_problem(text: str) -> str | None:
    """Why `text` names no judge, in one line, or None when it names one (a rule or a model spec). A name
    without a provider is taken for a misspelt built-in judge (the nearest one suggested, all of them listed);
    a spec with a provider is said wrong as ModelSpec.parse says it."""
    if text in JUDGE_RULES:
        return None
    rule, _, encoder = text.partition("+")
    if rule == BaselineModel.SEMANTIC and encoder:  # `semantic+ENCODER`, as the judge's id reads
        if re.match(ENCODER_PATTERN, encoder):
            return None
        return (f"unknown encoder {encoder!r} in judge {text!r}: encoders are minilm, e5, e5+minilm or "
                "openai:MODEL@URL (e.g. semantic+e5)")
    try:
        ModelSpec.parse(text)
        return None
    except ValueError as error:
        refusal = str(error)
    name = text.strip()
    hint = did_you_mean(name, list(BUILTIN_JUDGES))
    if ":" in name and not hint:
        return refusal
    if name in NO_LLM_MODELS - set(JUDGE_RULES):
        hint = f"'{name}' is a rule of the decomposer or the answerer, not a judge;"
    elif not hint and name and not any(c.isspace() or c in "@#" for c in name):
        hint = f"did you mean 'openai:{name}' (a model spec starts with its provider)?"
    return (f"unknown judge {text!r}: {hint + ' ' if hint else ''}built-in judges: {', '.join(BUILTIN_JUDGES)}, "
            f"or a model spec such as {SPEC_EXAMPLES[0]}")


def check_model_specs(config: EvalConfig, source: str = "<config>", judges_option: str | None = None) -> None:
    """Raise ConfigError naming the key of a model spec that does not parse, of a judge that names none, or
    of repeated judge ids: what building the Models would fail on, found before a store is opened or anything
    is built. `judges_option`: the command-line option the judges came from, named instead of their keys."""

    def judges_key(index: int | None = None) -> str:
        if judges_option is not None:
            return judges_option
        return f"{source}: invalid configuration key 'judges{'' if index is None else f'.{index}.model'}'"

    for i, judge in enumerate(config.judges):
        problem = judge_problem(judge.model)
        if problem is not None:
            raise ConfigError(f"{judges_key(i)}: {problem}")
    for key, _, text in _llm_specs(config):
        try:
            ModelSpec.parse(text)
        except ValueError as error:
            raise ConfigError(f"{source}: invalid configuration key '{key}': {error}") from None
    for i, judge in enumerate(config.judges):
        if judge.model == BaselineModel.LEARNED and config.calibration_profile is None:
            raise ConfigError(f"{judges_key(i)}: '{judge.model}' applies the stacked models of the run's calibration "
                              "profile, and the run has none: set 'calibration_profile' (or --calibration-profile P) "
                              "to a profile saved by `ragcourt calibrate --suite wice|hotpotqa --file F --fit-stacked "
                              "--save-profile P`")
    ids = [j.judge_id for j in config.judges]
    if len(set(ids)) != len(ids):
        remedy = "give each once" if judges_option is not None else "give repeated models an 'id'"
        raise ConfigError(f"{judges_key()}: judge ids must be unique, got {ids}; {remedy}")


def check_judge_options(values: Sequence[str], option: str = "--judge") -> None:
    """Raise ConfigError naming the option (not a configuration key the user never wrote) when a judge given
    on the command line names none."""
    for text in values:
        problem = judge_problem(text)
        if problem is not None:
            raise ConfigError(f"{option}: {problem}")


async def check_endpoints(config: EvalConfig, *, reach: bool = True) -> None:
    """Raise EndpointUnavailableError, one line per endpoint that cannot answer, naming who calls it, the URL
    and the cause. Every distinct endpoint of the configuration is asked once, at the same time (llm.probe);
    `reach=False` asks nothing and checks only what needs no request (api.openai.com's key, local model files)."""
    users: dict[str, tuple[ModelSpec, list[str]]] = {}
    for _, user, text in _llm_specs(config):
        spec = ModelSpec.parse(text)
        users.setdefault(spec.endpoint, (spec, []))[1].append(user)
    timeout_s = min(PROBE_TIMEOUT_S, config.timeout_s)
    specs = [spec for spec, _ in users.values()]
    found = (await asyncio.gather(*(probe(spec, timeout_s=timeout_s) for spec in specs)) if reach
             else [static_failure(spec) for spec in specs])
    failures = tuple(EndpointFailure(" and ".join(dict.fromkeys(who)), *failure)
                     for (_, who), failure in zip(users.values(), found, strict=True) if failure is not None)
    if failures:
        raise EndpointUnavailableError(failures)


async def prepare_run(config: EvalConfig, store: RecordStore, system_of: Callable[[Models], RAGSystem],
                      vectors: VectorStore | None, collection: str | None, *,
                      check: bool = True) -> tuple[Models, EvalContext]:
    """The Models and EvalContext of a run, as the CLI and the Python API both build them, with nothing
    evaluated when a part cannot answer: a missing key or model file is refused first (EndpointUnavailableError),
    then a judge id whose model changed (ConfigError), then, when `check`, an endpoint that does not answer
    (EndpointUnavailableError; `check=False` for a server that rejects the probe)."""
    await check_endpoints(config, reach=False)
    models = Models(config, store)
    context = eval_context(config, system_of(models), store, models, vectors, collection)
    if check:
        await check_endpoints(config)
    return models, context


@dataclass
class Models:
    """Builds every LLM client of a run with one cache, one usage meter and one limiter per endpoint."""

    config: EvalConfig
    store: RecordStore
    usage: UsageMeter = field(default_factory=UsageMeter)
    limiters: LimiterRegistry | None = None
    _embedding: MiniLMEmbedding | None = None
    # One connection pool per endpoint for the run's clients (judges, decomposer, answerer share it).
    _http_clients: dict[str, openai.DefaultAsyncHttpxClient] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.limiters = self.limiters or LimiterRegistry(default_max_concurrency=self.config.llm_concurrency)

    def client(self, spec_text: str, role: str, *, logprobs: bool = False, temperature: float = 0.0) -> Any:
        spec = ModelSpec.parse(spec_text)
        assert self.limiters is not None
        # A local model runs one call at a time anyway (llama.cpp): queue the rest here, not in threads.
        in_flight = 1 if spec.provider is Provider.LOCAL else None
        http_client = None
        if spec.provider is not Provider.LOCAL:
            if spec.endpoint not in self._http_clients:  # made once: a pool's TLS set-up costs ~20 ms
                self._http_clients[spec.endpoint] = openai.DefaultAsyncHttpxClient()
            http_client = self._http_clients[spec.endpoint]
        return build_client(
            spec, role=role, cache=self.store,
            limiter=self.limiters.limiter_for(spec.endpoint, max_concurrency=in_flight),
            usage=self.usage, timeout_s=self.config.timeout_s, logprobs=logprobs, temperature=temperature,
            top_logprobs=5 if logprobs else None, http_client=http_client,
        )

    def embed(self, texts: list[str]) -> np.ndarray:
        if self._embedding is None:
            self._embedding = MiniLMEmbedding()
        return np.asarray(self._embedding(texts), dtype=np.float32)

    def judges(self) -> list[Judge]:
        out: list[Judge] = []
        profile = load_profile(self.config)
        for index, spec in enumerate(self.config.judges):
            if spec.model == BaselineModel.LEARNED:
                out.append(learned_judge(self.config, index, profile, self.embed))
            elif spec.model == BaselineRule.LEXICAL:
                out.append(BaselineJudge(BaselineRule.LEXICAL, name=spec.id))
            elif spec.model == BaselineRule.SEMANTIC:
                out.append(BaselineJudge(BaselineRule.SEMANTIC, encoder=EncoderChoice.parse(spec.encoder or LEGACY_ENCODER),
                                         name=spec.judge_id))
            else:
                client = self.client(spec.model, "judge", logprobs=spec.logprobs)
                # Repeated CuBE scorings sample; every other call of the judge stays at temperature 0.
                sampling = (self.client(spec.model, "judge", logprobs=spec.logprobs, temperature=spec.repeat_temperature)
                            if spec.repeats > 1 else None)
                out.append(LLMJudge(client, spec.judge_id, dimension_protocol=spec.protocol, repeats=spec.repeats,
                                    repeat_client=sampling))
        ids = [j.judge_id for j in out]
        if len(set(ids)) != len(ids):
            raise ValueError(f"judge ids must be unique, got {ids}; give repeated models an 'id'")
        for judge in out:
            if isinstance(judge, LLMJudge):
                self._check_judge_identity(judge)
        return out if profile is None else apply_profile(out, self.config, profile)

    def _check_judge_identity(self, judge: LLMJudge) -> None:
        """Stored verdicts are reused by (check, judge id): under an id whose model changed they would be
        another model's answers. Refused, not silently reused or overwritten."""
        others = self.store.judge_model_ids(judge.judge_id) - {judge.client.model_id}
        if others:
            raise ConfigError(
                f"judge id '{judge.judge_id}' has verdicts from {', '.join(sorted(others))} in this workspace's "
                f"store and now names {judge.client.model_id}: its stored verdicts would be reused for another "
                "model. Give this judge a new 'id' in the configuration, or use another --home."
            )

    def decomposer(self) -> Decomposer:
        if self.config.decomposer == "sentences":
            return SentenceDecomposer()
        return LLMDecomposer(self.client(self.config.decomposer, "decomposer"))

    def generator(self) -> Generator:
        if self.config.answerer == "extractive":
            return ExtractiveGenerator()
        return LLMGenerator(self.client(self.config.answerer, "answerer"), name=self.config.answerer)

    def bounds_generator(self) -> Generator | None:
        """The generator of the closed-book and oracle answers of a precomputed system; None when unset."""
        spec = self.config.bounds_generator
        if spec is None:
            return None
        if spec == "extractive":
            return ExtractiveGenerator()
        return LLMGenerator(self.client(spec, "bounds"), name=spec)

    def confidence_probe(self) -> ConfidenceProbe | None:
        """CUE-R's confidence probe for systems that report no confidence; None when the config sets none."""
        spec = self.config.confidence_probe
        return None if spec is None else ConfidenceProbe(self.client(spec, "confidence_probe"))


def eval_context(config: EvalConfig, system: RAGSystem, store: RecordStore, models: Models,
                 vectors: VectorStore | None, collection: str | None) -> EvalContext:
    """The EvalContext of a run: `system` under test, the jury and decomposer `models` builds, `store`, and
    the chromadb `vectors` / `collection` that give distractors (None for none)."""
    return EvalContext(config=config, system=system, judges=models.judges(), decomposer=models.decomposer(),
                       store=store, vectors=vectors, collection=collection, confidence_probe=models.confidence_probe())


@dataclass
class ConfiguredAnswerer(ExtractiveGenerator):
    """Stands for the configuration's `answerer` in a system built before the run (reference_system): a run
    replaces it with Models.generator() (the cache, usage meter and limits of the run), as the CLI builds it.
    Called outside a run, it answers extractively."""

    name: str = "configured-answerer"
