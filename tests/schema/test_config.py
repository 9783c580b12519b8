"""EvalConfig: defaults, YAML/TOML loading, errors that name the file and the key, overrides."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ragcourt.schema import ConditionKind
from ragcourt.schema.config import (
    DEFAULT_DIMENSIONS,
    ConfigError,
    DimensionProtocol,
    DimensionSpec,
    DistractorPolicy,
    EvalConfig,
    JudgeSpec,
    Method,
    RankScoreRule,
    Retriever,
    ReviewMode,
    load_config,
    parse_config,
)


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults() -> None:
    config = EvalConfig()
    assert config.judges == (JudgeSpec(model="lexical"),)
    assert config.judges[0].judge_id == "lexical"
    assert (config.decomposer, config.answerer) == ("sentences", "extractive")
    assert config.methods == (Method.QCARE, Method.ELEMENTS)
    assert config.conditions == (ConditionKind.NORMAL,)
    assert [d.name for d in config.dimensions] == ["relevance", "specificity", "completeness", "quality"]
    assert all(d.weight == "auto" for d in DEFAULT_DIMENSIONS)
    assert config.perturbations.kinds == () and config.perturbations.distractor is DistractorPolicy.RANDOM
    assert (config.top_k, config.score_threshold, config.loose_k_factor) == (5, None, 2)
    assert config.review_mode is ReviewMode.DEFERRED
    assert (config.concurrency, config.llm_concurrency, config.timeout_s) == (8, 16, 60.0)
    assert (config.retriever, config.reference_retriever) == (None, Retriever.DENSE)
    assert config.rank_score is RankScoreRule.SEED  # seed 000's 10 - rank
    assert parse_config({}) == config


def test_judge_id_defaults_to_the_model_string() -> None:
    assert JudgeSpec(model="openai:gpt-4o-mini").judge_id == "openai:gpt-4o-mini"
    assert JudgeSpec(model="openai:gpt-4o-mini", id="mini").judge_id == "mini"


YAML_CONFIG = """\
judges:
  - model: lexical
  - model: openai:gpt-4o-mini@http://127.0.0.1:8000/v1
    id: mini
    logprobs: true
methods: [qcare, cube]
conditions: [normal, closed_book, oracle]
dimensions:
  - name: relevance
    weight: 2
  - name: quality
perturbations:
  kinds: [remove, replace]
  max_chunks: 2
  distractor: best_non_gold
top_k: 3
review_mode: inline
"""

TOML_CONFIG = """\
methods = ["qcare", "cube"]
conditions = ["normal", "closed_book", "oracle"]
top_k = 3
review_mode = "inline"

[[judges]]
model = "lexical"

[[judges]]
model = "openai:gpt-4o-mini@http://127.0.0.1:8000/v1"
id = "mini"
logprobs = true

[[dimensions]]
name = "relevance"
weight = 2

[[dimensions]]
name = "quality"

[perturbations]
kinds = ["remove", "replace"]
max_chunks = 2
distractor = "best_non_gold"
"""


@pytest.mark.parametrize(("name", "text"), [("c.yaml", YAML_CONFIG), ("c.yml", YAML_CONFIG), ("c.toml", TOML_CONFIG)])
def test_yaml_and_toml_files_load_the_same_config(tmp_path: Path, name: str, text: str) -> None:
    config = load_config(write(tmp_path, name, text))
    assert [j.judge_id for j in config.judges] == ["lexical", "mini"]
    assert config.judges[1].logprobs is True
    assert config.methods == (Method.QCARE, Method.CUBE)
    assert config.conditions == (ConditionKind.NORMAL, ConditionKind.CLOSED_BOOK, ConditionKind.ORACLE)
    assert config.dimensions == (DimensionSpec(name="relevance", weight=2), DimensionSpec(name="quality"))
    assert config.perturbations.kinds == (ConditionKind.REMOVE, ConditionKind.REPLACE)
    assert config.perturbations.max_chunks == 2
    assert config.perturbations.distractor is DistractorPolicy.BEST_NON_GOLD
    assert config.top_k == 3 and config.review_mode is ReviewMode.INLINE


@pytest.mark.parametrize("text", ["", "# only a comment\n"])
def test_an_empty_yaml_file_gives_the_defaults(tmp_path: Path, text: str) -> None:
    assert load_config(write(tmp_path, "c.yaml", text)) == EvalConfig()


@pytest.mark.parametrize(
    ("text", "key", "problem"),
    [
        ("top_k: 0\n", "top_k", "greater than or equal to 1"),
        ("colour: red\n", "colour", "Extra inputs are not permitted"),
        ("judges:\n  - model: lexical\n    temperature: 0\n", "judges.0.temperature", "Extra inputs"),
        ("dimensions:\n  - name: relevance\n    weight: heavy\n", "dimensions.0.weight",
         "weight must be a number or 'auto'"),
        ("dimensions:\n  - name: relevance\n    weight: -1\n", "dimensions.0.weight", "must not be negative"),
        ("perturbations:\n  kinds: [remove, normal]\n", "perturbations.kinds", "normal is not a perturbation"),
        ("conditions: [closed_book, oracle]\n", "conditions", "conditions must include normal"),
        ("conditions: [normal, loose]\n", "conditions", "loose is set through"),
        ("methods: [qcare, magic]\n", "methods.1", "Input should be"),
        ("loose_coverage_threshold: 1.5\n", "loose_coverage_threshold", "less than or equal to 1"),
        ("confidence_probe: lexical\n", "confidence_probe", "the confidence probe asks a model"),
    ],
)
def test_errors_name_the_file_and_the_key(tmp_path: Path, text: str, key: str, problem: str) -> None:
    path = write(tmp_path, "bad.yaml", text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: invalid configuration")
    assert f"key '{key}'" in message
    assert problem in message


def test_toml_errors_name_the_key_too(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.toml", "[perturbations]\nkinds = ['normal']\n")
    with pytest.raises(ConfigError, match=r"key 'perturbations\.kinds': .*normal is not a perturbation"):
        load_config(path)


@pytest.mark.parametrize("text", ["- top_k: 3\n", "just a string\n", "42\n", "[]\n", "false\n"])
def test_a_non_mapping_top_level_is_refused(tmp_path: Path, text: str) -> None:
    path = write(tmp_path, "list.yaml", text)
    with pytest.raises(ConfigError, match="the top level must be a mapping of keys") as caught:
        load_config(path)
    assert str(caught.value).startswith(str(path))


def test_invalid_yaml_syntax(tmp_path: Path) -> None:
    path = write(tmp_path, "broken.yaml", "top_k: [3\n")
    with pytest.raises(ConfigError, match="not valid YAML") as caught:
        load_config(path)
    assert str(caught.value).startswith(f"{path}: ")


def test_invalid_toml_syntax(tmp_path: Path) -> None:
    path = write(tmp_path, "broken.toml", "top_k = = 3\n")
    with pytest.raises(ConfigError, match=f"^{re.escape(str(path))}: not valid TOML"):
        load_config(path)


def test_unknown_format_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown config format"):
        load_config(write(tmp_path, "c.json", "{}"))
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "absent.yaml")


def test_with_overrides_returns_a_validated_copy() -> None:
    base = EvalConfig()
    changed = base.with_overrides(top_k=3, judges=[{"model": "lexical"}, {"model": "semantic"}])
    assert changed.top_k == 3 and [j.model for j in changed.judges] == ["lexical", "semantic"]
    assert base.top_k == 5 and len(base.judges) == 1  # the original is untouched
    assert changed.dimensions == base.dimensions


def test_with_overrides_names_the_bad_key() -> None:
    with pytest.raises(ConfigError, match=r"overrides: invalid configuration\n  key 'top_k'"):
        EvalConfig().with_overrides(top_k=0)
    with pytest.raises(ConfigError, match="key 'conditions': .*must include normal"):
        EvalConfig().with_overrides(conditions=[ConditionKind.ORACLE])


def test_cube_brings_its_bound_conditions() -> None:
    config = parse_config({"methods": ["cube"]})
    assert config.conditions == (ConditionKind.NORMAL, ConditionKind.CLOSED_BOOK, ConditionKind.ORACLE)
    assert config.perturbations.kinds == ()


def test_cuer_brings_perturbations_and_the_closed_book_control() -> None:
    config = parse_config({"methods": ["cuer"]})
    assert config.conditions == (ConditionKind.NORMAL, ConditionKind.CLOSED_BOOK)
    assert config.perturbations.kinds == (ConditionKind.REMOVE, ConditionKind.REPLACE, ConditionKind.DUPLICATE)
    chosen = parse_config({"methods": ["cuer", "cube"], "perturbations": {"kinds": ["remove"], "seed": 3}})
    assert chosen.perturbations.kinds == (ConditionKind.REMOVE,) and chosen.perturbations.seed == 3
    assert chosen.conditions == (ConditionKind.NORMAL, ConditionKind.CLOSED_BOOK, ConditionKind.ORACLE)


def test_cuer_retrieves_by_bm25_unless_the_config_says_otherwise(tmp_path: Path) -> None:
    """Seed 004 retrieves the top 5 by BM25: the cuer method sets retriever: bm25 when the config sets neither a
    retriever nor a score_threshold (a cosine cut-off, which only the dense retriever has)."""
    assert parse_config({"methods": ["cuer"]}).reference_retriever is Retriever.BM25
    assert parse_config({"methods": ["cuer"], "retriever": "dense"}).reference_retriever is Retriever.DENSE
    kept = parse_config({"methods": ["cuer"], "score_threshold": 0.3})
    assert (kept.retriever, kept.reference_retriever) == (None, Retriever.DENSE)
    assert parse_config({"retriever": "bm25"}).reference_retriever is Retriever.BM25  # without cuer too
    # the CLI's --method cuer over a default config (with_overrides) brings it; an explicit dense survives overrides
    assert EvalConfig().with_overrides(methods=["cuer"]).reference_retriever is Retriever.BM25
    dense = parse_config({"methods": ["cuer"], "retriever": "dense"})
    assert dense.with_overrides(top_k=3).reference_retriever is Retriever.DENSE
    with pytest.raises(ConfigError, match="key '.*': .*score_threshold is a cosine similarity .* set retriever: dense"):
        load_config(write(tmp_path, "c.yaml", "retriever: bm25\nscore_threshold: 0.3\n"))
    with pytest.raises(ConfigError, match="key 'retriever': Input should be 'dense' or 'bm25'"):
        parse_config({"retriever": "sparse"})


def test_a_stored_cuer_run_without_a_retriever_retrieved_densely() -> None:
    """A cuer configuration dumped before the key existed is read as it ran (rerun retrieves again from it); one
    dumped since holds the key."""
    stored = EvalConfig(methods=(Method.CUER,), retriever=Retriever.DENSE).model_dump(mode="json")
    del stored["retriever"]
    assert EvalConfig.model_validate(stored).reference_retriever is Retriever.BM25  # what the preset would give
    assert EvalConfig.of_stored_run(stored).reference_retriever is Retriever.DENSE
    now = EvalConfig(methods=(Method.CUER,)).model_dump(mode="json")
    assert now["retriever"] == "bm25" and EvalConfig.of_stored_run(now).reference_retriever is Retriever.BM25
    assert EvalConfig.of_stored_run(EvalConfig().model_dump(mode="json")) == EvalConfig()


def test_the_rank_score_rule_is_an_enum_key() -> None:
    assert parse_config({"rank_score": "top_n"}).rank_score is RankScoreRule.TOP_N
    assert "rank_score" not in EvalConfig().model_dump() and "retriever" not in EvalConfig().model_dump()
    with pytest.raises(ConfigError, match="key 'rank_score': Input should be 'seed' or 'top_n'"):
        parse_config({"rank_score": "n+2"})


def test_a_custom_dimension_needs_a_rubric(tmp_path: Path) -> None:
    path = write(tmp_path, "dims.yaml", "dimensions:\n  - name: relevance\n  - name: humour\n")
    with pytest.raises(ConfigError, match=r"key 'dimensions\.1': .*dimension 'humour' needs a rubric"):
        load_config(path)
    config = parse_config({"dimensions": [{"name": "humour", "rubric": "Is it funny?", "weight": 0.5}]})
    assert config.dimensions == (DimensionSpec(name="humour", rubric="Is it funny?", weight=0.5),)


def test_judge_options_of_cube_dimension_scores_name_the_judge() -> None:
    """Another protocol or repetition count is another judge (stored verdicts are reused by check and judge id)."""
    config = parse_config({"judges": [
        {"model": "openai:m"},
        {"model": "openai:m", "protocol": "score_only"},
        {"model": "openai:m", "repeats": 3},
        {"model": "openai:m", "repeats": 3, "repeat_temperature": 1.0, "protocol": "score_only"},
        {"model": "openai:m", "id": "mine", "repeats": 2},
    ]})
    assert [j.judge_id for j in config.judges] == ["openai:m", "openai:m+score_only", "openai:m+x3+t0.7",
                                                   "openai:m+score_only+x3+t1", "mine"]
    assert [j.protocol for j in config.judges][:2] == [DimensionProtocol.REASONED, DimensionProtocol.SCORE_ONLY]
    assert [j.repeat_temperature for j in config.judges] == [0.7, 0.7, 0.7, 1.0, 0.7]


@pytest.mark.parametrize(("judge", "problem"), [
    ({"model": "lexical", "repeats": 2}, "repeats: 'lexical' is a rule, not a model"),
    ({"model": "semantic", "protocol": "score_only"}, "protocol: 'semantic' is a rule, not a model"),
    ({"model": "openai:m", "repeats": 0}, "greater than or equal to 1"),
    ({"model": "openai:m", "repeats": 3, "repeat_temperature": 0}, "greater than 0"),
    ({"model": "openai:m", "protocol": "terse"}, "'reasoned' or 'score_only'"),
])
def test_judge_options_are_checked(judge: dict, problem: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(problem)):
        parse_config({"judges": [judge]})
