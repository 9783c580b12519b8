"""astream yields in order of completion while diagnostics.jsonl grows; `ragcourt watch` reads it back."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence

from typer.testing import CliRunner

import ragcourt
from ragcourt.cli import app
from ragcourt.schema import Chunk, Condition, Sample
from ragcourt.schema.config import EvalConfig, Method
from ragcourt.systems import Generation

DELAYS = {"slow": 0.6, "medium": 0.3, "fast": 0.0}


class DelayedSystem:
    """Answers each question after its own delay, so questions finish in the order fast, medium, slow."""

    name = "delayed"

    async def retrieve(self, sample: Sample, k: int, score_threshold: float | None) -> list[Chunk]:
        return [Chunk(id=f"{sample.id}-c", text=f"The {sample.id} answer is yes.", rank=1)]

    async def generate(self, sample: Sample, chunks: Sequence[Chunk], condition: Condition) -> Generation:
        await asyncio.sleep(DELAYS[sample.id])
        return Generation(text=f"The {sample.id} answer is yes.", used_chunk_ids=(chunks[0].id,))


SAMPLES = [Sample(id=name, question=f"What is the {name} answer?") for name in ("slow", "medium", "fast")]


async def test_astream_yields_by_completion_and_the_jsonl_grows_meanwhile(tmp_path) -> None:
    config = EvalConfig(methods=(Method.QCARE,), concurrency=3)
    jsonl = tmp_path / "runs" / "order" / "diagnostics.jsonl"
    seen, lines_when_yielded = [], []
    async for diagnostics in ragcourt.astream(SAMPLES, DelayedSystem(), config=config, home=tmp_path,
                                              run_id="order"):
        seen.append(diagnostics.sample_id)
        lines_when_yielded.append(len(jsonl.read_text().splitlines()))
        assert (tmp_path / "runs" / "order" / "run.lock").exists()  # still running
    assert seen == ["fast", "medium", "slow"]  # not the input order
    assert lines_when_yielded == [1, 2, 3]
    assert [json.loads(line)["sample_id"] for line in jsonl.read_text().splitlines()] == seen


def test_watch_once_prints_one_line_per_question_and_the_summary(tmp_path) -> None:
    ragcourt.evaluate(SAMPLES, DelayedSystem(), config=EvalConfig(methods=(Method.QCARE,)), home=tmp_path,
                      run_id="done")
    result = CliRunner().invoke(app, ["watch", "done", "--home", str(tmp_path), "--once"])
    assert result.exit_code == 0, result.output
    assert result.output.count("✓") == 3
    assert "run done (finished): 3 questions, 0 failed" in result.output
    assert "completeness" in result.output


def test_watch_follows_until_the_lock_is_gone(tmp_path) -> None:
    run_dir = tmp_path / "runs" / "follow"
    run_dir.mkdir(parents=True)
    (run_dir / "run.lock").write_text("1")
    ragcourt.evaluate(SAMPLES[2:], DelayedSystem(), config=EvalConfig(methods=(Method.QCARE,)), home=tmp_path,
                      run_id="other")
    line = (tmp_path / "runs" / "other" / "diagnostics.jsonl").read_text()
    (run_dir / "diagnostics.jsonl").write_text(line + '{"half a line')  # the writer is mid-line

    async def finish_later() -> None:
        await asyncio.sleep(0.3)
        (run_dir / "run.lock").unlink()

    async def watch_it() -> str:
        task = asyncio.create_task(finish_later())
        result = await asyncio.to_thread(
            CliRunner().invoke, app, ["watch", "follow", "--home", str(tmp_path), "--interval", "0.05"]
        )
        await task
        assert result.exit_code == 0, result.output
        return result.output

    output = asyncio.run(watch_it())
    assert output.count("✓") == 1 and "run follow (finished): 1 questions" in output


def test_watch_unknown_run_fails_clearly(tmp_path) -> None:
    result = CliRunner().invoke(app, ["watch", "nope", "--home", str(tmp_path)])
    assert result.exit_code == 2 and "no run directory" in result.output
