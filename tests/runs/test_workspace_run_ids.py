"""A run id derived before a configuration key existed stays the same after it is added (at its default), so
the same command still resumes the same run after an upgrade."""

from __future__ import annotations

from ragcourt.runs.workspace import derived_run_id
from ragcourt.schema import Sample
from ragcourt.schema.config import EvalConfig, JudgeSpec, RankScoreRule, Reconcile

SAMPLES = [Sample(id="q1", question="Who wrote Hamlet?", reference_answer="Shakespeare.")]
# Derived by the code of f0098e5 (before reconcile, escalate_below_posterior, calibration_profile, store,
# telemetry and fail_under existed) for this configuration and sample.
RUN_ID_BEFORE_THE_NEW_KEYS = "run-03a878525c3c9342"


def test_default_configuration_keeps_the_run_id_it_had_before_the_new_keys() -> None:
    assert derived_run_id(EvalConfig(), SAMPLES, "precomputed") == RUN_ID_BEFORE_THE_NEW_KEYS


def test_a_setting_that_changes_figures_changes_the_run_id() -> None:
    weighted = EvalConfig(reconcile=Reconcile.WEIGHTED)
    assert derived_run_id(weighted, SAMPLES, "precomputed") != RUN_ID_BEFORE_THE_NEW_KEYS
    stricter = EvalConfig(escalate_below_posterior=0.9)
    assert derived_run_id(stricter, SAMPLES, "precomputed") != RUN_ID_BEFORE_THE_NEW_KEYS


def test_where_records_and_spans_go_and_the_gate_are_no_part_of_the_identity() -> None:
    elsewhere = EvalConfig(store="postgresql://u@127.0.0.1:1/db", telemetry={"otlp_endpoint": "http://127.0.0.1:4318"},
                           fail_under={"element_coverage": 0.5})
    assert derived_run_id(elsewhere, SAMPLES, "precomputed") == RUN_ID_BEFORE_THE_NEW_KEYS


# Derived by the code of bfbc4b7 (before rank_score and retriever existed) for these configurations and SAMPLES.
CUBE_RUN_ID_BEFORE = "run-54f186ce3d899c46"  # methods: [cube]
CUER_RUN_ID_BEFORE = "run-7392ccafceb54ea9"  # methods: [cuer]
CUER_WITH_THRESHOLD_RUN_ID_BEFORE = "run-8bb2061b3cb926fd"  # methods: [cuer], score_threshold: 0.3


def test_the_rank_score_rule_at_its_default_keeps_the_run_id_and_another_rule_changes_it() -> None:
    assert derived_run_id(EvalConfig(methods=("cube",)), SAMPLES, "precomputed") == CUBE_RUN_ID_BEFORE
    shifted = EvalConfig(methods=("cube",), rank_score=RankScoreRule.TOP_N)
    assert derived_run_id(shifted, SAMPLES, "precomputed") != CUBE_RUN_ID_BEFORE


def test_cuer_retrieving_by_bm25_now_is_another_run_and_a_kept_dense_retriever_is_not() -> None:
    assert derived_run_id(EvalConfig(methods=("cuer",)), SAMPLES, "precomputed") != CUER_RUN_ID_BEFORE
    # a score_threshold keeps cuer on the dense retriever, as before the key: the same run
    kept = EvalConfig(methods=("cuer",), score_threshold=0.3)
    assert derived_run_id(kept, SAMPLES, "precomputed") == CUER_WITH_THRESHOLD_RUN_ID_BEFORE


# Derived by the code before the semantic judge's encoder was a choice (it always embedded with MiniLM).
SEMANTIC_RUN_ID_BEFORE_ENCODERS = "run-1781d3771ecdb558"


def test_a_semantic_judge_on_minilm_keeps_its_run_id_and_the_new_default_encoder_is_another_run() -> None:
    def jury(**semantic: str) -> EvalConfig:
        return EvalConfig(judges=(JudgeSpec(model="lexical"), JudgeSpec(model="semantic", **semantic)))

    assert derived_run_id(jury(encoder="minilm"), SAMPLES, "precomputed") == SEMANTIC_RUN_ID_BEFORE_ENCODERS
    stored = EvalConfig.of_stored_run({"judges": [{"model": "lexical"}, {"model": "semantic"}]})
    assert derived_run_id(stored, SAMPLES, "precomputed") == SEMANTIC_RUN_ID_BEFORE_ENCODERS
    ids = {derived_run_id(jury(**e), SAMPLES, "precomputed") for e in ({}, {"encoder": "e5"}, {"encoder": "minilm"})}
    assert len(ids) == 3


def test_the_run_id_is_hashed_as_the_samples_are_read_and_is_the_one_of_their_list() -> None:
    from ragcourt.schema import content_id

    samples = [Sample(id=f"q{i}", question=f"Where is Acme{i}?") for i in range(50)]
    settings = EvalConfig().model_dump(mode="json", exclude={"telemetry"})
    whole = "run-" + content_id(settings, [s.content_hash for s in samples], "precomputed")
    assert derived_run_id(EvalConfig(), (s for s in samples), "precomputed") == whole  # a one-pass iterable
    assert derived_run_id(EvalConfig(), samples, "precomputed", digits=10) == whole[:14]
