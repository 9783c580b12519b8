"""`ragcourt calibrate --suite ...` shows its progress (commands.progress) over the judged items: WiCE claims and
HotpotQA questions every judge has decided, of all taken; for the RAGChecker pairs the pairwise verdicts asked
(their total is known only as the match goes: stored verdicts are reused). Piped, as here, it is plain lines."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragcourt.cli import app
from ragcourt.commands.output import console
from ragcourt.judging import BaselineJudge, BaselineRule
from ragcourt.stores.records import RecordStore
from ragcourt.validity.measure import Suite
from ragcourt.validity.suite import run_suite

SHARED = Path("/work/shared/data")
WICE = SHARED / "wice/claim_dev_sample_60.jsonl"
HOTPOTQA = SHARED / "hotpotqa/dev_sample_100.jsonl"
RAGCHECKER = SHARED / "ragchecker_pairs/human_labeled_sample.json"
pytestmark = pytest.mark.skipif(not SHARED.is_dir(), reason="the shared data slices are not on this machine")


def _said(output: str) -> str:
    return " ".join(output.split())


@pytest.mark.parametrize(("suite", "path"), [(Suite.WICE, WICE), (Suite.HOTPOTQA, HOTPOTQA)])
async def test_the_suite_tells_each_item_every_judge_decided(tmp_path, suite, path):
    told: list[tuple[int, int | None]] = []
    judges = [BaselineJudge(BaselineRule.LEXICAL), BaselineJudge(BaselineRule.LEXICAL, name="lexical-2")]
    with RecordStore(tmp_path / "store.sqlite") as store:
        report = await run_suite(suite, path, judges, {}, store, limit=7, n_resamples=20,
                                 progress=lambda done, total: told.append((done, total)))
    assert report.n_items == 7
    assert told == [(i, 7) for i in range(8)]  # 0 of 7 first, then one per item (claim or question)


async def test_the_ragchecker_suite_tells_the_verdicts_asked_and_none_on_a_repeat(tmp_path):
    told: list[tuple[int, int | None]] = []
    with RecordStore(tmp_path / "store.sqlite") as store:
        args = (Suite.RAGCHECKER, RAGCHECKER, [BaselineJudge(BaselineRule.LEXICAL)], {}, store)
        await run_suite(*args, limit=5, n_resamples=20, progress=lambda done, total: told.append((done, total)))
        # five pairs in both orders (identical answers would be one check), one verdict a call
        assert told[-1][0] in range(5, 11) and [d for d, _ in told] == list(range(1, told[-1][0] + 1))
        assert {total for _, total in told} == {None}
        told.clear()
        await run_suite(*args, limit=5, n_resamples=20, progress=lambda done, total: told.append((done, total)))
    assert told == []  # every verdict came from the store: nothing asked


def test_calibrate_prints_the_progress_lines_and_a_closing_count(tmp_path, monkeypatch):
    monkeypatch.setattr(console, "width", 300)
    monkeypatch.delenv("CI", raising=False)
    result = CliRunner().invoke(app, ["calibrate", "--suite", "wice", "--file", str(WICE), "--judge", "lexical",
                                      "--limit", "20", "--bootstrap", "20", "--home", str(tmp_path)])
    assert result.exit_code == 0, result.output
    said = _said(result.output)
    # plain lines at each tenth of the work (2 of 20 claims), then the closing line instead of the 20th
    steps = re.findall(r"judging WiCE claims: (\d+)/20 \(\d+%\)", said)
    assert steps == [str(n) for n in range(2, 20, 2)]
    assert re.search(r"judging WiCE claims: 20/20 in \d+:\d\d, [\d.]+(/s|/min)", said)
    assert said.index("judging WiCE claims: 20/20") < said.index("20 of 60 items")  # before the figures
