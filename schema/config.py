"""Evaluation configuration: what to run, with which judges, under which conditions.

Loadable from YAML or TOML; every error names the key and the problem.
"""

from __future__ import annotations

import tomllib
from enum import StrEnum
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ragcourt.schema import ConditionKind


class ConfigError(ValueError):
    """A configuration file or value is wrong; the message names the file and key."""


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ReviewMode(StrEnum):
    DEFERRED = "deferred"  # escalations go to the review queue; the run goes on with provisional labels
    INLINE = "inline"  # the graph interrupts and waits for a person's decision


class Reconcile(StrEnum):
    """How a binary check's verdicts become its decision.

    majority (the default): the majority label (judging.reconciliation).
    weighted: as the run's final step (and at every re-score), each judge's accuracy is estimated per check kind
    by Dawid-Skene from the run's own verdicts, with the reviews so far clamped, and each binary check is decided
    by its posterior (validity.jury_weights); pairwise checks and scores stay as majority / mean decides them.
    """

    MAJORITY = "majority"
    WEIGHTED = "weighted"


class PairwiseJury(StrEnum):
    """How the jury's A/B/Tie on a pairwise question comes from its judges (metrics.dice.jury_label).

    majority_tie (the default, as rankings were always decided): the argmax of the mean (P_A, P_B, P_Tie), a
    maximum shared by two labels being Tie, so two judges that differ (A and Tie, A and B) make a Tie.
    mean_probability: the argmax of the same mean, with a tie margin on P_B - P_A: Tie when |P_B - P_A| <=
    margin or P_Tie is the largest; else the side that leads (so A and Tie make A). The margin is learned from
    human labels (`calibrate --suite ragchecker --fit-threshold`, saved in the calibration profile); 0 without one.
    """

    MAJORITY_TIE = "majority_tie"
    MEAN_PROBABILITY = "mean_probability"


class Method(StrEnum):
    """Which families of checks a run makes (Q-CARE and elements are the default diagnosis)."""

    QCARE = "qcare"
    ELEMENTS = "elements"
    CUBE = "cube"
    CUER = "cuer"
    # The reference-side checks RAGAS also makes: answer claims against the reference's elements (claim
    # precision, factual F1 with element recall) and each element against each chunk (context precision with
    # reference). Needs a reference answer; splits the answer into claims and the reference into elements.
    REFERENCE = "reference"


class Batching(StrEnum):
    """How an LLM judge's calls group the alignment checks of one sample and condition.

    per_kind: one call per check kind (focused prompts; the evidence is sent with each kind).
    per_sample: one call for every alignment kind at once (judging.combined_checks.CombinedJudgements), the evidence sent once.
    joint: per_sample's judgement, and the splits too in one call (question -> sub-queries, reference -> elements,
    answer -> claims, those not frozen yet; judging.decomposers.joint_splits): two calls per sample. A long
    reply is cut into as few calls as fit (combined_checks.MAX_REPLY_ITEMS), and the items a reply leaves out
    are asked again once, in one follow-up call (counted: metric `follow_up_calls`).
    Verdicts are per atomic check either way; dimension scores and pairwise checks are never combined.
    """

    PER_KIND = "per_kind"
    PER_SAMPLE = "per_sample"
    JOINT = "joint"

    @property
    def combines(self) -> bool:
        """Whether an LLM judge gets one combined call per sample and condition."""
        return self is not Batching.PER_KIND


class DimensionProtocol(StrEnum):
    """How an LLM judge replies to a CuBE dimension-score check.

    reasoned (the default): a short justification through the rubric's five criteria, then the score; the
    justification is the verdict's rationale, which the review desk shows for escalated scores.
    score_only: seed 000's own protocol (4.3: "Only output the final score; do not include any additional
    content"): the reply is the score alone, fewer completion tokens, no rationale.
    """

    REASONED = "reasoned"
    SCORE_ONLY = "score_only"


class RankScoreRule(StrEnum):
    """How CuBE turns the gold document's rank in the normal retrieval into the rank score its automatic weights
    correlate with (seed 000, 5.3). Either way a missed gold document scores 0, and one retrieved alone scores a
    point more than at rank 1.

    seed (the default): the seed's own ``10 - rank`` (its TOP-N is 8: ranks 1-8 score 9-2, alone 10). Defined up to
    TOP-N 9: from rank 10 on a retrieved gold document would score no more than a missed one, so a run with a
    larger TOP-N has no automatic weights under this rule (the reason says so).
    top_n: ``top_n + 2 - rank``, the seed's scale moved so the last retrieved rank scores 2 at any TOP-N; equal to
    ``10 - rank`` at the seed's TOP-N 8 only.
    """

    SEED = "seed"
    TOP_N = "top_n"


class Retriever(StrEnum):
    """How the built-in reference system retrieves from its chromadb collection.

    dense: the collection's own nearest neighbours (cosine similarity of its embeddings).
    bm25: Okapi BM25 over the texts of the same chunks, as seed 004 (CUE-R) retrieves its top 5.
    """

    DENSE = "dense"
    BM25 = "bm25"


class DistractorPolicy(StrEnum):
    RANDOM = "random"  # a random corpus chunk not retrieved for this question
    BEST_NON_GOLD = "best_non_gold"  # the best-ranked non-gold chunk outside the top-k


class BaselineModel(StrEnum):
    """The built-in parts that call no LLM, named where a model spec would stand: judges (`lexical`,
    `semantic`, and `learned`, the stacked models of the run's calibration profile), the decomposer
    (`sentences`) and the reference answerer (`extractive`)."""

    LEXICAL = "lexical"
    SEMANTIC = "semantic"
    LEARNED = "learned"
    SENTENCES = "sentences"
    EXTRACTIVE = "extractive"


NO_LLM_MODELS = frozenset(BaselineModel)  # never parsed as model specs, never priced, never checked for a server

# The encoders of the semantic judge and the corpus (stores.encoders parses them): `minilm`, `e5`,
# `openai:MODEL@URL`, or `RELEVANCE+ENTAILMENT` of the two built-in ones.
ENCODER_PATTERN = r"^((minilm|e5)(\+(minilm|e5))?|openai:[^@\s]+@https?://\S+)$"
# The offline default: e5 for relevance and pairs, MiniLM for entailment (where e5 measured no better).
DEFAULT_ENCODER = "e5+minilm"
# What a semantic judge stored without an encoder ran with: every run before the choice existed.
LEGACY_ENCODER = "minilm"


def encoder_suffix(encoder: str | None) -> str:
    """What a semantic judge's id adds for its encoder: nothing for MiniLM (the id its verdicts were always stored
    under), else `+ENCODER` (`semantic+e5`, `semantic+e5+minilm`): verdicts are reused by judge id, so one
    encoder's never serve another's."""
    return "" if encoder in (None, LEGACY_ENCODER) else f"+{encoder}"


BUILTIN_DIMENSIONS = ("relevance", "specificity", "completeness", "quality")  # seed 000's four


class JudgeSpec(_Strict):
    """One member of the jury: `lexical` (no LLM) or a model spec such as `openai:gpt-4o-mini@URL`."""

    model: str
    id: str | None = Field(default=None, description="defaults to the model string and its non-default options")
    logprobs: bool = False
    protocol: DimensionProtocol = Field(
        default=DimensionProtocol.REASONED,
        description="CuBE dimension scores: 'reasoned' (default: justification, then score) or 'score_only' "
        "(seed 000's protocol: the score alone; fewer completion tokens, no rationale); see DimensionProtocol",
    )
    repeats: int = Field(
        default=1, ge=1, le=20,
        description="seed 000 5.8, a single-model jury: the model scores each CuBE dimension this many times, "
        "sampling at repeat_temperature, and its verdict is the mean of the scored repetitions (each repetition "
        "is its own cached call); 1 (default): one call at temperature 0",
    )
    repeat_temperature: float = Field(
        default=0.7, gt=0.0, le=2.0,
        description="the sampling temperature of the repeated dimension scorings when repeats > 1 (at 0 a model "
        "repeats its first score, and the mean would be that score); every other call of the judge stays at 0",
    )
    # A run id leaves MiniLM's out (runs.workspace.derived_run_id), so an id derived before the key existed (every
    # semantic judge then embedded with MiniLM) stays the same; a stored run without it is read as MiniLM's.
    encoder: str | None = Field(
        default=None, pattern=ENCODER_PATTERN, exclude_if=lambda encoder: encoder is None,
        description=f"the semantic judge's encoder: 'minilm' (English-only), 'e5' (multilingual), "
        f"'openai:MODEL@URL' (an OpenAI-compatible embeddings endpoint), or '{DEFAULT_ENCODER}' (the default: e5 "
        "for relevance and pairs, MiniLM for claims and elements against evidence); the config's 'encoder' "
        "otherwise",
    )

    @property
    def judge_id(self) -> str:
        """`id`, else the model string plus the options that change its scores ("+score_only", "+x3+t0.7"):
        stored verdicts are reused by check and judge id, so another protocol or repetition count is another
        judge, never a reuse of the other's verdicts."""
        if self.id:
            return self.id
        options = [] if self.protocol is DimensionProtocol.REASONED else [f"+{self.protocol}"]
        options += [f"+x{self.repeats}+t{self.repeat_temperature:g}"] if self.repeats > 1 else []
        return self.model + "".join(options) + encoder_suffix(self.encoder)

    @model_validator(mode="before")
    @classmethod
    def _default_encoder(cls, data: Any) -> Any:
        """A semantic judge without an encoder embeds with the default one; `semantic+ENCODER` (as its id reads, e.g.
        `--judge semantic+e5`) names the encoder."""
        if not isinstance(data, dict):
            return data
        model = data.get("model")
        if isinstance(model, str) and model.startswith(f"{BaselineModel.SEMANTIC}+") and data.get("encoder") is None:
            data = {**data, "model": str(BaselineModel.SEMANTIC), "encoder": model.partition("+")[2]}
        if data.get("model") == BaselineModel.SEMANTIC and data.get("encoder") is None:
            return {**data, "encoder": DEFAULT_ENCODER}
        return data

    @model_validator(mode="after")
    def _options_need_a_model(self) -> JudgeSpec:
        changed = [name for name in ("protocol", "repeats", "repeat_temperature")
                   if getattr(self, name) != type(self).model_fields[name].default]
        if changed and self.model in NO_LLM_MODELS:
            raise ValueError(f"{', '.join(changed)}: '{self.model}' is a rule, not a model; these options are a "
                             "model judge's (a rule gives the same score every time)")
        if self.encoder is not None and self.model != BaselineModel.SEMANTIC:
            raise ValueError(f"encoder: only the semantic judge embeds with a chosen encoder, not '{self.model}'")
        return self


class ThresholdJudgeSpec(_Strict):
    """Seed 001 4.2's scalar baseline as a tournament judge: per question, each system's ``Score_S(q)`` is the
    mean of the given numeric columns of its answer file (a JSONL row's extra keys, kept in `metadata`), and
    the pair's label is A / B / Tie by the tie band (metrics.dice.threshold_label). No model call; a missing
    or non-numeric figure leaves the check unscored."""

    columns: tuple[str, ...] = Field(min_length=1, description="answer-file columns averaged into Score_S(q)")
    tie_margin: float = Field(default=0.05, ge=0.0, description="Tie unless one score leads by more than this")

    @property
    def judge_id(self) -> str:
        return f"threshold:{'+'.join(self.columns)}@{self.tie_margin:g}"

    @classmethod
    def parse(cls, text: str) -> ThresholdJudgeSpec:
        """``col1,col2,col3[@margin]``, e.g. ``faithfulness,answer_relevancy,context_utilization@0.05``."""
        columns, _, margin = text.partition("@")
        names = tuple(c.strip() for c in columns.split(",") if c.strip())
        try:
            return cls(columns=names, **({"tie_margin": float(margin)} if margin else {}))
        except (ValidationError, ValueError) as error:
            raise ConfigError(f"metric judge {text!r}: want COLUMN[,COLUMN...][@MARGIN] ({error})") from None


class DimensionSpec(_Strict):
    """A CuBE dimension scored 0-10. weight: a number, or 'auto' (|Pearson| with the rank score)."""

    name: str
    rubric: str | None = Field(default=None, description="rubric text; defaults to the bundled rubric")
    weight: float | str = "auto"

    @field_validator("weight")
    @classmethod
    def _weight(cls, value: float | str) -> float | str:
        if isinstance(value, str) and value != "auto":
            raise ValueError("weight must be a number or 'auto'")
        if isinstance(value, float | int) and value < 0:
            raise ValueError("weight must not be negative")
        return value

    @model_validator(mode="after")
    def _custom_needs_rubric(self) -> DimensionSpec:
        if self.rubric is None and self.name not in BUILTIN_DIMENSIONS:
            raise ValueError(f"dimension '{self.name}' needs a rubric (built-in: {', '.join(BUILTIN_DIMENSIONS)})")
        return self


DEFAULT_DIMENSIONS = tuple(DimensionSpec(name=name) for name in BUILTIN_DIMENSIONS)


class PerturbationSpec(_Strict):
    kinds: tuple[ConditionKind, ...] = ()
    max_chunks: int | None = Field(default=None, ge=1, description="perturb a seeded sample of chunks")
    distractor: DistractorPolicy = DistractorPolicy.RANDOM
    seed: int = 0

    @field_validator("kinds")
    @classmethod
    def _only_perturbations(cls, kinds: tuple[ConditionKind, ...]) -> tuple[ConditionKind, ...]:
        for kind in kinds:
            if not kind.is_perturbation:
                raise ValueError(f"{kind} is not a perturbation (use remove, replace, duplicate)")
        return kinds


class TelemetrySpec(_Strict):
    """Where a run's OpenTelemetry spans go (observability.telemetry). Not part of a run's identity: the derived run id
    leaves it out, and an unset one is left out of the stored configuration."""

    otlp_endpoint: str | None = Field(
        default=None, description="an OTLP/HTTP collector's base URL (Phoenix http://127.0.0.1:6006, a collector "
        "http://127.0.0.1:4318), /v1/traces added; unset: OTEL_EXPORTER_OTLP_ENDPOINT, else no spans",
    )

    @field_validator("otlp_endpoint")
    @classmethod
    def _http_url(cls, endpoint: str | None) -> str | None:
        if endpoint is not None and not endpoint.startswith(("http://", "https://")):
            raise ValueError(f"{endpoint!r} is not an http(s) URL (OTLP/HTTP)")
        return endpoint


class EvalConfig(_Strict):
    judges: tuple[JudgeSpec, ...] = Field(default=(JudgeSpec(model="lexical"),), min_length=1)
    # Never dumped: it is in the semantic judges it is given to (their ids and dumps name it), and a corpus keeps
    # the encoder it was indexed with (`ragcourt index --config`).
    encoder: str | None = Field(
        default=None, exclude=True, pattern=ENCODER_PATTERN,
        description="the offline encoder of semantic judges that name none, and of `ragcourt index --config`: "
        f"'minilm', 'e5', 'openai:MODEL@URL' or '{DEFAULT_ENCODER}'; unset: '{DEFAULT_ENCODER}' for the judges, "
        "'minilm' for the corpus",
    )
    decomposer: str = Field(default="sentences", description="'sentences' (no LLM) or a model spec")
    answerer: str = Field(default="extractive", description="'extractive' (no LLM) or a model spec")
    bounds_generator: str | None = Field(
        default=None,
        description="'extractive' or a model spec that answers the closed_book and oracle conditions for a "
        "precomputed system (prompt answer_with_context; the closed book's shows no passage); unset: the CuBE bounds are missing",
    )
    confidence_probe: str | None = Field(
        default=None,
        description="CUE-R: a model spec asked once per answer for a 0-1 confidence when the system reports none "
        "(the system's own generator model, or a judge's); the answer is labelled probed. Unset (default): no probe, "
        "and confidence error is n/a for such systems",
    )
    methods: tuple[Method, ...] = (Method.QCARE, Method.ELEMENTS)
    conditions: tuple[ConditionKind, ...] = Field(
        default=(ConditionKind.NORMAL,), description="answered conditions besides perturbations"
    )
    dimensions: tuple[DimensionSpec, ...] = DEFAULT_DIMENSIONS
    perturbations: PerturbationSpec = PerturbationSpec()
    top_k: int = Field(default=5, ge=1)
    score_threshold: float | None = None
    # The two keys below came after runs were stored: unset / at the default they are left out of the dump, so a
    # run id derived before they existed stays the same. The CUE-R method sets `retriever: bm25` when the config
    # says neither that nor a score_threshold (_method_needs): such a run retrieves otherwise than before, and so
    # gets another id.
    retriever: Retriever | None = Field(
        default=None, exclude_if=lambda retriever: retriever is None,
        description="the reference system's retrieval: 'dense' (chromadb, cosine similarity) or 'bm25' (seed 004); "
        "unset: bm25 when the methods include cuer and no score_threshold is set, else dense (reference_retriever)",
    )
    rank_score: RankScoreRule = Field(
        default=RankScoreRule.SEED, exclude_if=lambda rule: rule is RankScoreRule.SEED,
        description="CuBE's rank score: 'seed' (10 - rank, seed 000; TOP-N up to 9) or 'top_n' (top_n + 2 - rank)",
    )
    loose_coverage_threshold: float = Field(default=0.6, ge=0.0, le=1.0)
    loose_k_factor: int = Field(default=2, ge=1)
    drop_pointer_elements: bool = Field(
        default=False, description="drop elements that only point to a place ('see section X'), seed 003 step 5"
    )
    escalate_below_agreement: float = Field(
        default=1.0, ge=0.0, le=1.0,
        description="a binary check escalates when the share of judges agreeing is below this; an even split "
        "(no majority: no label, 0.5 where seed 003 averages the judges) always escalates",
    )
    escalate_score_spread: float = Field(
        default=3.0, ge=0.0, description="a 0-10 score escalates when judges differ by more than this"
    )
    # The two keys below came after runs were stored: at their defaults they are left out of the dump, so a run id
    # derived before they existed stays the same (majority decides as it always did).
    reconcile: Reconcile = Field(
        default=Reconcile.MAJORITY, exclude_if=lambda method: method is Reconcile.MAJORITY,
        description="'majority' (default) or 'weighted': binary checks decided by the Dawid-Skene posterior of the "
        "run's jury, estimated per check kind from its own verdicts and reviews (see Reconcile)",
    )
    escalate_below_posterior: float = Field(
        default=0.8, ge=0.5, le=1.0, exclude_if=lambda share: share == 0.8,
        description="reconcile: weighted: a binary check also escalates when the posterior of its decided label is "
        "below this (the judges' disagreement escalates it as under majority)",
    )
    review_mode: ReviewMode = ReviewMode.DEFERRED
    concurrency: int = Field(default=8, ge=1, description="samples evaluated at once")
    llm_concurrency: int = Field(default=16, ge=1, description="LLM calls in flight per endpoint")
    batching: Batching = Field(
        default=Batching.PER_SAMPLE,
        description="per_sample (default: about 1/2 the calls and prompt tokens of per_kind, docs/BENCHMARKS.md), "
        "per_kind judge calls, or joint (the splits in one call too: two calls per sample; see Batching)",
    )
    timeout_s: float = Field(default=60.0, gt=0)
    trim_proportion: float = Field(default=0.1, ge=0.0, lt=0.5)
    seed: int = 0
    # Unset, it is left out of the dump, so every run id derived before the key existed stays the same.
    calibration_profile: str | None = Field(
        default=None, min_length=1, exclude_if=lambda path: path is None,
        description="a calibration profile (JSON, `ragcourt calibrate --fit-threshold --save-profile`): on the "
        "kinds it has thresholds for, a judge's label is yes when its P(yes) >= the learned threshold "
        "(validity.profile); a path relative to the working directory",
    )
    # Where the records go, not what is evaluated: never dumped, so it is in no run id, config.json or RunInfo
    # (a URL may hold a password). `--store` and $RAGCOURT_STORE take precedence (runs.workspace).
    store: str | None = Field(
        default=None, exclude=True, pattern=r"^postgres(ql)?://",
        description="a postgresql:// URL for the record store, LLM cache and checkpoints; unset: the workspace's "
        "own SQLite file",
    )
    # Where the corpus is, like `store`: never dumped. `--chroma` takes precedence (runs.workspace).
    chroma: str | None = Field(
        default=None, exclude=True, pattern=r"^http://",
        description="a Chroma server's http://HOST:PORT URL for the reference system's corpus (shared by the "
        "workers of `run --workers`); unset: the workspace's chromadb folder",
    )
    telemetry: TelemetrySpec = Field(default_factory=TelemetrySpec,
                                     exclude_if=lambda telemetry: telemetry.otlp_endpoint is None)
    # A gate on the figures, not a setting of the evaluation: never dumped, so changing a threshold is no new
    # run (no run id, config.json or RunInfo holds it). Metric names are checked by analysis.gate.
    fail_under: dict[str, float] = Field(
        default_factory=dict, exclude=True,
        description="{metric: minimum}: `ragcourt run` exits 1 when a run mean is below its minimum or n/a "
        "(metric names as in the summary, e.g. element_coverage, c_prec@5); `--fail-under` adds to it",
    )

    @model_validator(mode="before")
    @classmethod
    def _judges_encoder(cls, data: Any) -> Any:
        """The config's `encoder` for each semantic judge that names none."""
        if not isinstance(data, dict) or data.get("encoder") is None or not isinstance(data.get("judges"), list | tuple):
            return data
        judges = [{**j, "encoder": j.get("encoder") or data["encoder"]}
                  if isinstance(j, dict) and j.get("model") == BaselineModel.SEMANTIC else j for j in data["judges"]]
        return {**data, "judges": judges}

    @model_validator(mode="before")
    @classmethod
    def _method_needs(cls, data: Any) -> Any:
        """CuBE needs the closed-book and oracle answer sets; CUE-R needs perturbations and the
        closed-book control. Asking for the method brings them unless the config sets them itself."""
        if not isinstance(data, dict):
            return data
        given_methods = data.get("methods", ())
        given_conditions = data.get("conditions", (ConditionKind.NORMAL,))
        if not isinstance(given_methods, list | tuple) or not isinstance(given_conditions, list | tuple) \
                or not isinstance(data.get("perturbations") or {}, dict | PerturbationSpec):
            return data  # a wrong type: the field validation names the key
        methods = {str(m) for m in given_methods}
        conditions = [str(c) for c in given_conditions]
        wanted = []
        if Method.CUBE in methods:
            wanted += [ConditionKind.CLOSED_BOOK, ConditionKind.ORACLE]
        if Method.CUER in methods:
            wanted.append(ConditionKind.CLOSED_BOOK)
            perturbations = dict(data.get("perturbations") or {})
            if not perturbations.get("kinds"):
                perturbations["kinds"] = [ConditionKind.REMOVE, ConditionKind.REPLACE, ConditionKind.DUPLICATE]
            data = {**data, "perturbations": perturbations}
            # Seed 004 retrieves the top-k by BM25; a score_threshold (a cosine cut-off) keeps the dense retriever.
            if data.get("retriever") is None and data.get("score_threshold") is None:
                data = {**data, "retriever": Retriever.BM25}
        missing = [str(kind) for kind in wanted if str(kind) not in conditions]
        return {**data, "conditions": [*conditions, *dict.fromkeys(missing)]} if missing else data

    @field_validator("confidence_probe")
    @classmethod
    def _probe_is_a_model(cls, spec: str | None) -> str | None:
        if spec in NO_LLM_MODELS:
            raise ValueError(f"'{spec}' is a rule, not a model: the confidence probe asks a model (a spec)")
        return spec

    @field_validator("conditions")
    @classmethod
    def _plain_conditions(cls, kinds: tuple[ConditionKind, ...]) -> tuple[ConditionKind, ...]:
        for kind in kinds:
            if kind.is_perturbation or kind is ConditionKind.LOOSE:
                raise ValueError(f"{kind} is set through 'perturbations' or the loose threshold")
        if ConditionKind.NORMAL not in kinds:
            raise ValueError("conditions must include normal")
        return kinds

    @model_validator(mode="after")
    def _threshold_is_a_similarity(self) -> EvalConfig:
        if self.score_threshold is not None and self.retriever is Retriever.BM25:
            raise ValueError("score_threshold is a cosine similarity of the dense retriever, and BM25 scores have no "
                             "such scale: drop it, or set retriever: dense")
        return self

    @classmethod
    def of_stored_run(cls, data: dict[str, Any]) -> EvalConfig:
        """The configuration a stored run ran with (RunInfo.config). A cuer run stored without `retriever` dates from
        before the key, when the reference system always retrieved densely: it is read as dense, not given the
        cuer method's BM25 (every cuer configuration dumped since holds the key)."""
        methods = data.get("methods") or ()
        if "retriever" not in data and isinstance(methods, list | tuple) and Method.CUER in methods:
            data = {**data, "retriever": Retriever.DENSE}
        judges = data.get("judges")
        if isinstance(judges, list | tuple):  # a semantic judge stored without an encoder embedded with MiniLM
            data = {**data, "judges": [{**j, "encoder": LEGACY_ENCODER} if isinstance(j, dict) and j.get("model") ==
                                       BaselineModel.SEMANTIC and not j.get("encoder") else j for j in judges]}
        return cls.model_validate(data)

    @property
    def reference_retriever(self) -> Retriever:
        """The reference system's retrieval: the config's `retriever`, else dense (the cuer method has set bm25 by
        then, unless a score_threshold kept the dense retriever)."""
        return self.retriever or Retriever.DENSE

    def with_overrides(self, **changes: Any) -> EvalConfig:
        """A validated copy with `changes` applied; a bad value raises ConfigError naming its key."""
        return parse_config({**self.model_dump(), "store": self.store, "chroma": self.chroma, "encoder": self.encoder,
                             "fail_under": self.fail_under, **changes}, "overrides")  # never dumped


def _describe(error: ValidationError, source: str) -> str:
    lines = [f"{source}: invalid configuration"]
    for item in error.errors():
        key = ".".join(str(part) for part in item["loc"]) or "(top level)"
        lines.append(f"  key '{key}': {item['msg']}")
    return "\n".join(lines)


def parse_config(data: dict[str, Any], source: str = "<config>") -> EvalConfig:
    try:
        return EvalConfig.model_validate(data)
    except ValidationError as error:
        raise ConfigError(_describe(error, source)) from None


def load_config(path: Path) -> EvalConfig:
    """Read an EvalConfig from a .yaml/.yml or .toml file."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path}: cannot read: {error}") from None
    try:
        if path.suffix in (".yaml", ".yml"):
            data = yaml.safe_load(text)
            if data is None:  # an empty file (or only comments): all defaults
                data = {}
        elif path.suffix == ".toml":
            data = tomllib.loads(text)
        else:
            raise ConfigError(f"{path}: unknown config format (use .yaml, .yml or .toml)")
    except (yaml.YAMLError, tomllib.TOMLDecodeError) as error:
        raise ConfigError(f"{path}: not valid {path.suffix[1:].upper()}: {error}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of keys")
    return parse_config(data, str(path))
