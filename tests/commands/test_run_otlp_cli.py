"""`ragcourt run --otlp-endpoint URL` (and $OTEL_EXPORTER_OTLP_ENDPOINT, read by the command): the run's spans
reach an OTLP/HTTP receiver on 127.0.0.1. examples/multi_turn.jsonl (2 samples, precomputed answers, no
reference) with the lexical judge: no LLM call, so the spans are the run, its 2 samples and their nodes."""

from __future__ import annotations

from collections import Counter

from fakes.otlp_receiver import OTLPReceiver
from fixtures import REPO
from typer.testing import CliRunner

from ragcourt.cli import app

EXAMPLE = REPO / "examples" / "multi_turn.jsonl"


def run_traced(tmp_path, *options: str, env: dict[str, str] | None = None) -> Counter:
    with OTLPReceiver() as receiver:
        result = CliRunner().invoke(app, ["run", str(EXAMPLE), "--system", "precomputed", "--no-check-endpoints",
                                          "--home", str(tmp_path), *[o.format(url=receiver.url) for o in options]],
                                    env=env)
        assert result.exit_code == 0, result.output
        assert {p.path for p in receiver.posted} == {"/v1/traces"}
        return Counter(span.name for span in receiver.spans())


def test_the_option_sends_the_runs_spans_before_the_environments_endpoint(tmp_path) -> None:
    with OTLPReceiver() as elsewhere:
        names = run_traced(tmp_path, "--otlp-endpoint", "{url}", env={"OTEL_EXPORTER_OTLP_ENDPOINT": elsewhere.url})
        assert elsewhere.posted == []
    assert (names["ragcourt.run"], names["ragcourt.sample"], names["answer"], names["score"]) == (1, 2, 2, 2)


def test_the_environments_endpoint_is_read_by_the_command(tmp_path, monkeypatch) -> None:
    with OTLPReceiver() as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
        result = CliRunner().invoke(app, ["run", str(EXAMPLE), "--system", "precomputed", "--home", str(tmp_path)])
        assert result.exit_code == 0, result.output
        names = Counter(span.name for span in receiver.spans())
    assert (names["ragcourt.run"], names["ragcourt.sample"]) == (1, 2)


def test_a_bad_endpoint_is_refused_naming_the_key(tmp_path) -> None:
    result = CliRunner().invoke(app, ["run", str(EXAMPLE), "--system", "precomputed", "--home", str(tmp_path),
                                      "--otlp-endpoint", "127.0.0.1:4318"])
    assert result.exit_code != 0 and "telemetry.otlp_endpoint" in result.output
