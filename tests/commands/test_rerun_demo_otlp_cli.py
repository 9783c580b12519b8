"""`ragcourt rerun --otlp-endpoint URL` and `ragcourt demo --otlp-endpoint URL`: the samples they evaluate send
their spans to an OTLP/HTTP receiver on 127.0.0.1, as `run`'s do (tests/commands/test_run_otlp_cli.py).

rerun: three precomputed samples, one reference edited; only that one is evaluated again, so the new run's spans
are one run span and one sample span (the two copied rows have none). demo: one question at top_k 5 and top_k 1,
two runs of one sample each, one telemetry for both."""

from __future__ import annotations

import json
from collections import Counter

from fakes.otlp_receiver import OTLPReceiver
from typer.testing import CliRunner

from ragcourt.cli import app

ROWS = [{"id": f"s{i}", "question": f"What about s{i}?", "reference_answer": f"s{i} fact one.",
         "contexts": [f"s{i} fact one. s{i} fact two."], "answer": f"s{i} fact one."} for i in range(3)]


def _rerun_setup(tmp_path):
    home, data, edited = tmp_path / "ws", tmp_path / "samples.jsonl", tmp_path / "edited.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    ran = CliRunner().invoke(app, ["run", str(data), "--system", "precomputed", "--run-id", "base", "--home",
                                   str(home)], env={"OTEL_EXPORTER_OTLP_ENDPOINT": ""})
    assert ran.exit_code == 0, ran.output
    edited.write_text("".join(json.dumps({**r, "reference_answer": "s2 fact two."} if r["id"] == "s2" else r) + "\n"
                              for r in ROWS))
    return home, edited


def test_rerun_sends_the_spans_of_the_rows_it_evaluates_again(tmp_path):
    home, edited = _rerun_setup(tmp_path)
    with OTLPReceiver() as receiver:
        result = CliRunner().invoke(app, ["rerun", "--changed", "base", "--dataset", str(edited), "--home", str(home),
                                          "--otlp-endpoint", receiver.url])
        assert result.exit_code == 0, result.output
        spans = receiver.spans()
    names = Counter(span.name for span in spans)
    assert "1 rows re-run, 2 rows copied" in " ".join(result.output.split())
    assert (names["ragcourt.run"], names["ragcourt.sample"], names["score"]) == (1, 1, 1)
    (sample,) = [s for s in spans if s.name == "ragcourt.sample"]
    attributes = {a.key: a.value.string_value for a in sample.attributes}
    assert attributes["ragcourt.sample_id"] == "s2" and attributes["ragcourt.run_id"].startswith("rerun-")


def test_rerun_refuses_a_bad_endpoint_naming_the_key(tmp_path):
    home, edited = _rerun_setup(tmp_path)
    result = CliRunner().invoke(app, ["rerun", "--changed", "base", "--dataset", str(edited), "--home", str(home),
                                      "--otlp-endpoint", "127.0.0.1:4318"])
    assert result.exit_code == 2 and "telemetry.otlp_endpoint" in result.output


def test_demo_sends_both_configurations_spans(tmp_path):
    with OTLPReceiver() as receiver:
        result = CliRunner().invoke(app, ["demo", "--home", str(tmp_path), "--questions", "1", "--otlp-endpoint",
                                          receiver.url], env={"COLUMNS": "160"})
        assert result.exit_code == 0, result.output
        spans = receiver.spans()
    names = Counter(span.name for span in spans)
    assert (names["ragcourt.run"], names["ragcourt.sample"], names["score"]) == (2, 2, 2) and names["answer"] >= 2
    samples = {s.span_id for s in spans if s.name == "ragcourt.sample"}
    assert all(s.parent_span_id in samples for s in spans if s.name in ("answer", "score"))
    runs = {a.value.string_value for s in spans if s.name == "ragcourt.run" for a in s.attributes
            if a.key == "ragcourt.run_id"}
    assert len(runs) == 2 and all(r.startswith("demo-") for r in runs)


def test_demo_refuses_a_bad_endpoint_before_indexing(tmp_path):
    result = CliRunner().invoke(app, ["demo", "--home", str(tmp_path), "--otlp-endpoint", "ftp://127.0.0.1"])
    assert result.exit_code == 2 and "telemetry.otlp_endpoint" in result.output
    assert "ready" not in result.output and not (tmp_path / "chroma").exists()
