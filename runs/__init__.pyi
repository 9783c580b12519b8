"""The public names of ragcourt.runs (see __init__.py)."""

from .api import EvalResult, aevaluate, astream, evaluate, langchain_config, reference_system
from .element_lists import export_lines, import_lines, read_lines, write_lines
from .models import ConfiguredAnswerer, Models, check_model_specs, eval_context
from .ranking import RankingReport, RankSettings, place_against_baselines, rank_systems
from .rerun import RerunResult, arerun_changed, plan_changes
from .rescore import arescore_run, aweigh_run, rescore_run
from .runner import ResumePlan, RunLock, RunLockedError, Runner, RunPaths, SamplesChangedError
from .workspace import DEFAULT_HOME, HOTPOTQA_COLLECTION, Workspace, derived_run_id

__all__ = [
    "ConfiguredAnswerer",
    "DEFAULT_HOME",
    "EvalResult",
    "HOTPOTQA_COLLECTION",
    "Models",
    "RankSettings",
    "RankingReport",
    "RerunResult",
    "ResumePlan",
    "RunLock",
    "RunLockedError",
    "RunPaths",
    "Runner",
    "SamplesChangedError",
    "Workspace",
    "aevaluate",
    "arerun_changed",
    "arescore_run",
    "aweigh_run",
    "astream",
    "check_model_specs",
    "derived_run_id",
    "eval_context",
    "evaluate",
    "export_lines",
    "import_lines",
    "langchain_config",
    "place_against_baselines",
    "plan_changes",
    "rank_systems",
    "read_lines",
    "reference_system",
    "rescore_run",
    "write_lines",
]
