"""`ragcourt rank`: a DICE tournament of systems' answer files, or one new system against baseline tiers."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from ragcourt.commands.endpoints import require_endpoints
from ragcourt.commands.judge_help import judge_help
from ragcourt.commands.output import ColumnMapOption, DatasetFormatOption, console, print_table
from ragcourt.commands.output import fail as _fail
from ragcourt.commands.progress import Tracker, track_progress
from ragcourt.data.formats import DatasetFormat, load_dataset, parse_column_map
from ragcourt.data.loaders import DatasetError
from ragcourt.metrics.dice import (
    PlacementBasis,
    TierPosition,
    TournamentMode,
    round_robin_schedule,
)
from ragcourt.nodes.tournament_state import OrderProtocol, ScoreScheme
from ragcourt.runs.models import Models, check_judge_options
from ragcourt.runs.ranking import (
    MatchProgress,
    RankingReport,
    RankSettings,
    TierReport,
    bias_rates,
    load_answer_set,
    place_against_baselines,
    rank_systems,
    save_pool,
)
from ragcourt.runs.workspace import DEFAULT_HOME, Workspace
from ragcourt.schema import MetricValue, Sample
from ragcourt.schema.calibration import CalibrationProfile, LearnedThreshold
from ragcourt.schema.config import (
    BaselineModel,
    ConfigError,
    EvalConfig,
    JudgeSpec,
    PairwiseJury,
    ThresholdJudgeSpec,
)


def load_references(path: Path, dataset_format: DatasetFormat = DatasetFormat.AUTO,
                    column_map: list[str] | None = None) -> dict[str, Sample]:
    """Questions with reference answers: any dataset data.formats reads (a samples file, Parquet, a saved Hugging
    Face dataset, a RAGAS or LangSmith export, a HotpotQA IRCoT file), `column_map` as --map gives it."""
    return {s.id: s for s in load_dataset(path, format=dataset_format, column_map=parse_column_map(column_map))}


def _ci(low: float | None, high: float | None, reason: str | None) -> str:
    return f"n/a ({reason})" if low is None or high is None else f"[{low:.0f}, {high:.0f}]"


def print_ranking(report: RankingReport) -> None:
    result = report.tournament
    n_systems = len(result.standings)
    all_pairs = sum(len(p.pairs) for p in round_robin_schedule([s.system for s in result.standings]))
    refit = result.refitted.ratings or {}
    rows = [
        [str(rank), s.system, f"{s.elo:.1f}", _ci(s.elo_ci.low, s.elo_ci.high, s.elo_ci.na_reason),
         f"{refit[s.system]:.1f}" if s.system in refit else "n/a", f"{s.wins}-{s.ties}-{s.losses}", str(s.matches),
         str(s.byes)]
        for rank, s in enumerate(result.standings, start=1)
    ]
    print_table(
        Table(title=f"DICE {result.mode} tournament: {result.n_matches} matches (round robin: {all_pairs}), "
                    f"{len(result.rounds)} rounds, {n_systems} systems, {len(report.questions)} questions per "
                    f"match, K={result.k:g}, seed {result.seed}",
              caption="#: rank by Elo; 95% CI: bootstrap over questions; refit Elo: the ratings the seed's update "
                      "settles on over every played match; W-T-L: matches won, tied, lost"),
        ["#", "system", "Elo", "95% CI", "refit Elo", "W-T-L", "matches", "byes"], rows,
    )
    # The seed ranks by the Elo after the last round; the refit (the ratings the seed's update settles on over
    # every played match) uses the same evidence better when matches are few (metrics.dice.refit_ratings).
    if result.refitted.ratings is None:
        console.print(f"refit Elo: n/a ({result.refitted.na_reason})")
    elif result.refitted.prior_note:
        console.print(f"refit Elo: {result.refitted.prior_note}")
    _print_footer(report.probability_sources, report.position_bias, report.unscored_questions,
                  report.calls.asked, report.calls.reused, report.orders)
    if report.dropped_questions:
        console.print(f"{report.dropped_questions} questions were not answered by every system and were left out")
    console.print(f"record store run: {report.run_id}")


def _bias_text(rate: MetricValue, flagged: int, decided: int) -> str:
    return f"{flagged}/{decided} ({rate.value:.1%})" if rate.value is not None else f"{flagged}/{decided} (n/a)"


def _print_footer(sources: dict, bias: dict[str, tuple[int, int]], unscored: int, asked: int, reused: int,
                  orders: OrderProtocol) -> None:
    shown = ", ".join(f"{source}: {n}" for source, n in sources.items())
    console.print(f"question probabilities from {shown} (logprobs of the decision token when every judge gave "
                  "them, else the jury's votes)")
    if orders is OrderProtocol.SINGLE:
        console.print("position bias: not measured (one order per question, A/B position drawn per question "
                      "from the seed; --orders both measures it)")
    else:
        rates = bias_rates(bias, orders)
        flags = ", ".join(f"{escape(j)} {_bias_text(rates[j], f, d)}" for j, (f, d) in bias.items())
        console.print(f"position bias rate (orders disagree -> Tie), per judge, flagged/decided pairs: {flags}")
    console.print(f"questions without any scored decision (left out): {unscored}; "
                  f"judge verdicts asked: {asked}, reused from the store: {reused}")


def _placement_text(position: TierPosition) -> str:
    if position.placement is None:
        return "n/a"
    basis = ("by the matches" if position.basis is PlacementBasis.HEAD_TO_HEAD
             else "by the Elo: the matches contradict each other")
    return f"{position.placement.value.replace('_', ' ')} ({basis})"


def print_tiers(report: TierReport) -> None:
    position = report.position
    rows = [
        [str(r.baseline.tier), r.baseline.name, f"{r.baseline.rating:.1f}", str(r.question_wins),
         str(r.question_ties), str(r.question_losses), "n/a" if r.score_share is None else f"{r.score_share:.2f}",
         str(r.outcome or "void")]
        for r in position.records
    ]
    print_table(
        Table(title=f"{escape(report.system)} against the baseline tiers ({report.n_questions} questions, "
                    f"{'both orders' if report.orders is OrderProtocol.BOTH else 'one drawn order'})",
              caption="W / T / L: questions the new system won, tied, lost; share: its score share"),
        ["tier", "baseline", "Elo", "W", "T", "L", "share", "match"], rows,
    )
    elo = "n/a (" + str(position.elo.na_reason) + ")" if position.elo.value is None else f"{position.elo.value:.1f}"
    console.print(f"Elo against the frozen baselines (one round from {report.initial_rating:g}, K={report.k:g}, "
                  f"as the pool was rated): {elo}; "
                  f"placement: {_placement_text(position)}")
    sources: dict = {}
    bias: dict[str, list[int]] = {}
    unscored = 0
    for outcomes in report.outcomes.values():
        for o in outcomes:
            unscored += o.score_a is None
            if o.score_a is not None:
                sources[o.probabilities.source] = sources.get(o.probabilities.source, 0) + 1
            for d in o.decisions:
                counts = bias.setdefault(d.judge_id, [0, 0])
                counts[0] += d.position_bias
                counts[1] += d.label is not None
    _print_footer(sources, {j: (f, d) for j, (f, d) in bias.items()}, unscored, report.calls.asked,
                  report.calls.reused, report.orders)
    console.print(f"record store run: {report.run_id}")


def rank(
    systems: Annotated[list[Path], typer.Argument(help="one answer file per system (JSONL: id, question, answer, "
                                                       "contexts?); with --baselines, the one new system")],
    judge: Annotated[list[str] | None, typer.Option(
        help=judge_help("default: lexical", learned=False))] = None,
    logprobs: Annotated[bool, typer.Option(help="ask LLM judges for logprobs (A/B/Tie probabilities)")] = False,
    mode: Annotated[TournamentMode, typer.Option(help="swiss or round_robin")] = TournamentMode.SWISS,
    rounds: Annotated[int | None, typer.Option(help="default: ceil(log2 n) + 1 (Swiss), all (round robin)")] = None,
    k: Annotated[float, typer.Option(help="Elo K")] = 32.0,
    seed: Annotated[int, typer.Option(help="pairing tie-breaks, question sample, bootstrap, --orders single's draw")] = 0,
    questions: Annotated[int | None, typer.Option(help="a seeded sample of N questions per match")] = None,
    scheme: Annotated[ScoreScheme, typer.Option(help="question score: hard (argmax) or soft (P_A + P_Tie/2)")] = (
        ScoreScheme.HARD),
    orders: Annotated[OrderProtocol, typer.Option(
        help="both (default): each pair judged with A first and B first, disagreeing orders count as Tie and "
             "the position bias rate is printed; single: seed 001's one order per question, A/B position drawn "
             "from --seed, half the judge calls, bias not measured")] = OrderProtocol.BOTH,
    metric_judge: Annotated[list[str] | None, typer.Option(
        help="repeatable: a scalar metric as a judge (seed 001 4.2 threshold baseline): COLUMN[,COLUMN...]"
             "[@MARGIN], the mean of the answer files' numeric columns per question (Score_S(q)); A or B wins "
             "when it leads by more than MARGIN (default 0.05), else Tie. Without --judge it judges alone")] = None,
    bootstrap: Annotated[int, typer.Option(help="bootstrap resamples for the Elo intervals")] = 1000,
    references: Annotated[Path | None, typer.Option(help="questions with reference answers (any dataset `run` "
                                                            "takes; --map and --format apply to it)")] = None,
    column_map: ColumnMapOption = None,
    dataset_format: DatasetFormatOption = DatasetFormat.AUTO,
    baselines: Annotated[Path | None, typer.Option(help="pool directory: evaluate one new system against its "
                                                           "High / Medium / Low baselines")] = None,
    save_baselines: Annotated[Path | None, typer.Option(help="keep the ranked answer sets as a baseline "
                                                                "pool in this directory")] = None,
    jury: Annotated[PairwiseJury | None, typer.Option(
        help="the hard score's label from the jury's mean (P_A, P_B, P_Tie): majority_tie (two differing judges "
             "make a Tie) or mean_probability (Tie within the tie margin on P_B - P_A); default: mean_probability "
             "with --calibration-profile, else majority_tie")] = None,
    calibration_profile: Annotated[Path | None, typer.Option(
        help="a profile with the pairwise jury's tie margin (`calibrate --suite ragchecker --fit-threshold "
             "--save-profile`)")] = None,
    home: Annotated[Path, typer.Option(help="workspace folder: record store, chroma, runs")] = DEFAULT_HOME,
) -> None:
    """Rank systems with DICE: pairwise A/B/Tie judgments (both orders, or seed 001's one drawn order), Swiss
    tournament, Elo. Scalar metrics of the answer files can play as threshold judges (--metric-judge)."""
    if baselines is not None and len(systems) != 1:
        _fail("with --baselines give exactly one answer file: the new system")
    if baselines is None and len(systems) < 2:
        _fail("a tournament needs at least two answer files")
    if BaselineModel.LEARNED in (judge or ()):
        # its stacked models decide yes / no checks; every pairwise verdict of it would be unscored
        _fail("--judge learned decides binary checks (claim_supported, subquery_in_chunk) only, not A / B / Tie: "
              "rank with lexical, semantic or an LLM judge")
    try:
        check_judge_options(judge or ())
        answer_sets = [load_answer_set(path) for path in systems]
        refs = load_references(references, dataset_format, column_map) if references else None
        metric_judges = tuple(ThresholdJudgeSpec.parse(m) for m in metric_judge or ())
        margin = _tie_margin(calibration_profile)
        rule = jury or (PairwiseJury.MEAN_PROBABILITY if margin is not None else PairwiseJury.MAJORITY_TIE)
        settings = RankSettings(mode=mode, rounds=rounds, k=k, seed=seed, questions=questions, scheme=scheme,
                                n_bootstrap=bootstrap, orders=orders, metric_judges=metric_judges, jury=rule,
                                tie_margin=margin.threshold if margin is not None and rule is
                                PairwiseJury.MEAN_PROBABILITY else 0.0)
        config = EvalConfig(judges=tuple(JudgeSpec(model=j, logprobs=logprobs) for j in (judge or ["lexical"])))
    except (DatasetError, ValueError, OSError) as error:
        _fail(str(error))
    store = Workspace(home).open_store()
    try:
        # with only metric judges given, they are the jury: no default lexical judge beside them
        judges = [] if judge is None and metric_judges else Models(config, store).judges()
        if judges:
            require_endpoints(config)
        if baselines is not None:
            with track_progress("matches against the baselines", total=None) as progress:
                placed = asyncio.run(place_against_baselines(answer_sets[0], baselines, judges, store, settings, refs,
                                                             on_match=_told(progress)))
            print_tiers(placed)
            return
        with track_progress("tournament matches", total=None) as progress:
            report = asyncio.run(rank_systems(answer_sets, judges, store, settings, refs, on_match=_told(progress)))
        print_ranking(report)
        if save_baselines is not None:
            pool = save_pool(save_baselines, report, answer_sets)
            tiers = ", ".join(f"{e.tier}: {e.name} ({e.rating:.1f})" for e in pool.tiered())
            console.print(escape(f"baseline pool saved in {save_baselines}: {tiers}"))
    except ValueError as error:
        _fail(str(error))
    finally:
        store.close()


def _tie_margin(path: Path | None) -> LearnedThreshold | None:
    """The profile's pairwise tie margin, said on the console; ConfigError (a ValueError) when it has none."""
    if path is None:
        return None
    margin = CalibrationProfile.load(path).tie_margin()
    if margin is None:
        raise ConfigError(f"calibration profile {path} has no pairwise tie margin: learn one with `ragcourt "
                          "calibrate --ragchecker --judge lexical --judge semantic --fit-threshold kappa "
                          "--save-profile PATH` (or --pairs FILE)")
    console.print(escape(f"pairwise jury: {margin.describe()} from {path}"))
    return margin


def _told(progress: Tracker) -> MatchProgress:
    def on_match(played: int, planned: int) -> None:
        progress.set_total(planned)
        progress.advance(played - progress.completed)

    return on_match


def register(app: typer.Typer) -> None:
    app.command("rank")(rank)
