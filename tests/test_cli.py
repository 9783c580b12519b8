"""The command line through typer's CliRunner: bad input ends with exit code 2 and a located message, no
traceback and nothing written; a precomputed run works offline and resumes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakes.openai_server import CHAT_PATH, MODELS_PATH, FakeOpenAIServer
from fakes.status_server import answering, closed_port
from typer.testing import CliRunner

from ragcourt.cli import app
from ragcourt.runs.models import Models
from ragcourt.schema import Label, Verdict, VerdictStatus
from ragcourt.schema.config import load_config
from ragcourt.stores.records import RecordStore

RUNNER = CliRunner()


def flat(text: str) -> str:
    """Rich wraps at the terminal width; compare with the line breaks folded away."""
    return " ".join(text.split())


@pytest.mark.parametrize(("name", "lines", "expected"), [
    ("missing.jsonl", ['{"id": "a", "question": "ok?"}', '{"id": "b", "answer": "x"}'],
     ["missing.jsonl:2:", "field 'question'", "is missing"]),
    ("dup.jsonl", ['{"id": "a", "question": "1?"}', '{"id": "b", "question": "2?"}', '{"id": "a", "question": "3?"}'],
     ["dup.jsonl:3:", "field 'id'", "duplicate id 'a'", "first on line 1"]),
    ("notjson.jsonl", ['{"id": "a", "question": "ok"}', '{"id": "b", "question": "unterminated'],
     ["notjson.jsonl:2:", "not valid JSON"]),
])
def test_bad_dataset_exits_2_naming_file_line_and_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, lines: list[str], expected: list[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    Path(name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = RUNNER.invoke(app, ["run", name, "--system", "precomputed", "--home", "home"])
    assert result.exit_code == 2
    assert isinstance(result.exception, SystemExit)
    output = flat(result.output)
    assert output.startswith("error:")
    for part in expected:
        assert part in output
    assert "Traceback" not in result.output
    assert not (tmp_path / "home").exists()  # nothing was created for a run that never started


def test_bad_config_exits_2_naming_the_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("data.jsonl").write_text('{"id": "a", "question": "ok?"}\n', encoding="utf-8")
    Path("bad.yaml").write_text("top_k: 0\n", encoding="utf-8")
    result = RUNNER.invoke(app, ["run", "data.jsonl", "--system", "precomputed", "--config", "bad.yaml",
                                 "--home", "home"])
    assert result.exit_code == 2
    assert "bad.yaml: invalid configuration key 'top_k'" in flat(result.output)
    assert "Traceback" not in result.output


def test_a_judge_id_whose_model_changed_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Verdicts are reused by (check, judge id): if 'main' now names another model, reusing them would pass one
    model's answers off as another's. The run stops before any call, saying what to do."""
    monkeypatch.chdir(tmp_path)
    Path("data.jsonl").write_text('{"id": "a", "question": "ok?", "answer": "yes"}\n', encoding="utf-8")
    Path("home").mkdir()
    with RecordStore(Path("home") / "store.sqlite") as store:
        store.put(Verdict(check_id="c1", judge_id="main", status=VerdictStatus.OK, label=Label.YES,
                          model_id="openai:small@http://127.0.0.1:9/v1"))
        assert store.judge_model_ids("main") == {"openai:small@http://127.0.0.1:9/v1"}
    Path("big.yaml").write_text("judges:\n  - model: openai:big@http://127.0.0.1:9/v1\n    id: main\n",
                                encoding="utf-8")
    refused = RUNNER.invoke(app, ["run", "data.jsonl", "--system", "precomputed", "--config", "big.yaml",
                                  "--home", "home"])
    assert refused.exit_code == 2
    said = flat(refused.output)
    assert ("judge id 'main' has verdicts from openai:small@http://127.0.0.1:9/v1" in said
            and "now names openai:big@http://127.0.0.1:9/v1" in said and "Give this judge a new 'id'" in said)
    assert "Traceback" not in refused.output

    Path("renamed.yaml").write_text("judges:\n  - model: openai:big@http://127.0.0.1:9/v1\n    id: main-big\n"
                                    "decomposer: sentences\n", encoding="utf-8")
    with RecordStore(Path("home") / "store.sqlite") as store:
        (judge,) = Models(load_config(Path("renamed.yaml")), store).judges()  # a new id: accepted
        assert judge.judge_id == "main-big"


def test_missing_dataset_and_unknown_run_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    missing = RUNNER.invoke(app, ["run", "nowhere.jsonl", "--system", "precomputed", "--home", "home"])
    assert missing.exit_code == 2 and "nowhere.jsonl" in flat(missing.output)
    assert "Traceback" not in missing.output
    no_store = RUNNER.invoke(app, ["summary", "nope", "--home", "home"])
    assert no_store.exit_code == 2 and "no record store at" in flat(no_store.output)


# A precomputed sample judged by the lexical baseline (content words, stopwords dropped; yes when at least
# half the subject's words are in the target, a third for claim -> sub-query):
#   sub-query "Where is the Acme headquarters?" {acme, headquarters}: c1 has both, c2 none -> r = [1, 0]:
#     C-Prec@2 = 1/2, C-nDCG@2 = 1
#   claim "The headquarters is in Springfield." {headquarters, springfield}: in c1 -> Verifiableness 1; serves the
#     sub-query (1/2 >= 1/3), which is answered (1/2 >= 1/2) -> Completeness 1, Conciseness 1
#   element "The Acme headquarters is in Springfield." {acme, headquarters, springfield}: in context (3/3), in
#     the answer (2/3) -> answered; both coverages (context, answer) 1 (no loose run)
PRECOMPUTED = {
    "id": "q1", "question": "Where is the Acme headquarters?",
    "reference_answer": "The Acme headquarters is in Springfield.",
    "contexts": [{"id": "c1", "text": "Acme headquarters are in Springfield."},
                 {"id": "c2", "text": "Bananas are yellow."}],
    "answer": "The headquarters is in Springfield.",
}


def test_precomputed_run_offline_then_resume_and_summary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("data.jsonl").write_text(json.dumps(PRECOMPUTED) + "\n", encoding="utf-8")
    args = ["run", "data.jsonl", "--system", "precomputed", "--judge", "lexical", "--run-id", "cli-1", "--home", "home"]
    first = RUNNER.invoke(app, args)
    assert first.exit_code == 0, first.output
    output = flat(first.output)
    assert "q1 c_prec=0.50 completeness=1.00 verifiableness=1.00 element_coverage=1.00 element_answer_coverage=1.00" in output
    assert "1 samples (0 failed), 8 checks, 0 unscored verdicts, 0 failed splits, 0 escalated" in output

    with RecordStore(tmp_path / "home" / "store.sqlite") as store:
        (diagnostics,) = store.get_diagnostics("cli-1")
        n_checks = len(store.checks_for("cli-1"))
    metrics = {m.name: m.value for m in diagnostics.metrics}
    assert metrics == {"c_prec": 0.5, "c_ndcg": 1.0, "completeness": 1.0, "conciseness": 1.0,
                       "verifiableness": 1.0, "element_answer_coverage": 1.0, "element_coverage": 1.0}
    assert [e.status for e in diagnostics.elements] == ["answered"]
    assert n_checks == 1 + 1 + 2 + 1 + 2 + 1  # element x2, sub-query/chunk x2, answered, supported x2, serves
    lines = (tmp_path / "home" / "runs" / "cli-1" / "diagnostics.jsonl").read_text().splitlines()
    assert [json.loads(line)["sample_id"] for line in lines] == ["q1"]

    again = RUNNER.invoke(app, args)  # resumes: the finished sample comes from the store
    assert again.exit_code == 0, again.output
    assert "q1 c_prec=0.50" in flat(again.output)
    assert len((tmp_path / "home" / "runs" / "cli-1" / "diagnostics.jsonl").read_text().splitlines()) == 1

    summary = RUNNER.invoke(app, ["summary", "cli-1", "--home", "home"])
    assert summary.exit_code == 0
    assert "1 samples (0 failed), 8 checks" in flat(summary.output)


@pytest.mark.parametrize(("command", "shown"), [
    (["run"], "openai:MODEL[@URL]"), (["rank"], "openai:MODEL[@URL]"), (["demo"], "jury [local LLM, lexical]"),
])
def test_help_shows_bracketed_text_literally(command: list[str], shown: str) -> None:
    """Rich reads `[...]` in help text as markup and drops it unless escaped."""
    result = RUNNER.invoke(app, [*command, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0 and shown in flat(result.output)


def test_a_collection_name_chromadb_refuses_is_one_line_naming_it(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(json.dumps({"id": "d1", "title": "Acme", "text": "Acme is in Springfield."}) + "\n")
    result = RUNNER.invoke(app, ["index", str(corpus), "--collection", "hp", "--home", str(tmp_path / "ws")])
    assert result.exit_code == 2
    assert "chromadb collection name 'hp' is not allowed" in flat(result.output)
    assert "3-512 characters" in flat(result.output) and "Traceback" not in result.output


def test_an_inline_review_run_says_which_samples_wait_and_how_to_finish_them(tmp_path: Path) -> None:
    """Lexical and semantic judges disagree on a paraphrase ("film was released" / "movie came out"): with
    inline review the sample stops at the interrupt, and the run must not look finished with 0 samples."""
    data, config = tmp_path / "d.jsonl", tmp_path / "inline.yaml"
    data.write_text(json.dumps({
        "id": "q1", "question": "When did the film come out?", "reference_answer": "The film was released in 1994.",
        "contexts": ["The movie came out in 1994 to wide acclaim."], "answer": "The movie came out in 1994."}) + "\n")
    config.write_text("judges:\n  - model: lexical\n  - model: semantic\nreview_mode: inline\n")
    args = ["run", str(data), "--system", "precomputed", "--config", str(config), "--home", str(tmp_path / "ws")]
    result = RUNNER.invoke(app, args)
    assert result.exit_code == 0, result.output
    text = flat(result.output)
    assert "1 samples are paused for an inline review: ragcourt review run-" in text
    assert "0 samples (0 failed)" in text and "awaiting review" in text


def test_a_chinese_dataset_with_the_semantic_judge_is_warned_about_the_english_only_embedding(tmp_path: Path) -> None:
    data = tmp_path / "zh.jsonl"
    data.write_text(json.dumps({"id": "z1", "question": "员工通讯补贴标准是多少？", "reference_answer": "每月500元。",
                                "contexts": ["普通员工每月通讯补贴为500元。"], "answer": "每月500元。"},
                               ensure_ascii=False) + "\n", encoding="utf-8")
    args = ["run", str(data), "--system", "precomputed", "--home", str(tmp_path / "ws")]
    minilm = tmp_path / "minilm.yaml"
    minilm.write_text("judges:\n  - model: lexical\n  - model: semantic\n    encoder: minilm\n")
    warned = RUNNER.invoke(app, [*args, "--config", str(minilm)])
    assert warned.exit_code == 0, warned.output
    assert "1 of 1 questions are in Chinese, Japanese or another non-Latin script" in flat(warned.output)
    assert "so the semantic judge are close to random" in flat(warned.output)
    # the default: e5 for relevance and pairs, MiniLM (still English-only) for claims and elements
    default = RUNNER.invoke(app, [*args, "--judge", "lexical", "--judge", "semantic"])
    assert "so the semantic judge's claim and element checks are close to random" in flat(default.output)
    lexical_only = RUNNER.invoke(app, [*args, "--judge", "lexical"])
    assert lexical_only.exit_code == 0 and "English-only" not in lexical_only.output


def test_a_multilingual_dataset_judged_with_e5_is_decided_without_the_english_only_warning(tmp_path: Path) -> None:
    """XQuAD's Arabic and Hindi questions (see tests/fixtures/xquad): with e5 the semantic judge is multilingual."""
    data, config = tmp_path / "xx.jsonl", tmp_path / "e5.yaml"
    rows = [{"id": "ar1", "question": "كم عدد الطلاب في المدرسة؟", "reference_answer": "ألف طالب",
             "contexts": ["في المدرسة ألف طالب."], "answer": "ألف طالب"},
            {"id": "hi1", "question": "स्कूल में कितने छात्र हैं?", "reference_answer": "एक हज़ार छात्र",
             "contexts": ["स्कूल में एक हज़ार छात्र हैं।"], "answer": "एक हज़ार छात्र"}]
    data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    config.write_text("encoder: e5\njudges:\n  - model: lexical\n  - model: semantic\n")
    home = tmp_path / "ws"
    result = RUNNER.invoke(app, ["run", str(data), "--system", "precomputed", "--config", str(config), "--home",
                                 str(home), "--run-id", "xx"])
    assert result.exit_code == 0, result.output
    assert "English-only" not in result.output and "2 samples (0 failed)" in flat(result.output)
    store = RecordStore(home / "store.sqlite")
    try:
        judged = {v.judge_id for v in store.get_verdicts([c.id for c in store.checks_for("xx")])}
    finally:
        store.close()
    assert "semantic+e5" in judged


# The issue-20 edit: q1's answer and contexts changed (contexts swapped in order, the answer now about bananas):
#   sub-query {acme, headquarters}: c1 "Bananas are yellow." none, c2 both -> r = [0, 1]: C-Prec@2 = 1/2
#   claim "Bananas are yellow." {bananas, yellow}: in c1 -> Verifiableness 1; serves no sub-query (0 of its words
#     in it) -> Completeness 0
#   element {acme, headquarters, springfield}: in context (c2, 3/3), not in the answer (0/3) -> generation_gap;
#     coverage 1 (it is retrieved)
EDITED = {**PRECOMPUTED, "contexts": list(reversed(PRECOMPUTED["contexts"])), "answer": "Bananas are yellow."}
OTHER = {"id": "q2", "question": "What colour are bananas?", "reference_answer": "Bananas are yellow.",
         "contexts": [{"id": "b1", "text": "Bananas are yellow."}], "answer": "Bananas are yellow."}


def test_an_edited_sample_is_evaluated_afresh_and_never_shown_with_the_old_figures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 20, item 1: the derived run id covers the samples' contents, so the same command after an edit is a
    new run that evaluates the edited text; the old run keeps its own text and figures. An explicit --run-id over
    the edited data is refused, naming the sample and pointing to `rerun --changed`."""
    monkeypatch.chdir(tmp_path)
    data = Path("data.jsonl")
    data.write_text(json.dumps(PRECOMPUTED) + "\n" + json.dumps(OTHER) + "\n", encoding="utf-8")
    args = ["run", "data.jsonl", "--system", "precomputed", "--judge", "lexical", "--home", "home"]
    first = RUNNER.invoke(app, args)
    assert first.exit_code == 0, first.output
    old_run = flat(first.output).rsplit("run ", 1)[1].split(":")[0]
    assert "q1 c_prec=0.50 completeness=1.00 verifiableness=1.00 element_coverage=1.00" in flat(first.output)
    with RecordStore(Path("home") / "store.sqlite") as store:
        old_figures = {d.sample_id: d.metrics for d in store.get_diagnostics(old_run)}

    data.write_text(json.dumps(EDITED) + "\n" + json.dumps(OTHER) + "\n", encoding="utf-8")
    again = RUNNER.invoke(app, args)
    assert again.exit_code == 0, again.output
    said = flat(again.output)
    new_run = said.rsplit("run ", 1)[1].split(":")[0]
    assert new_run != old_run and "resuming" not in said and "(stored)" not in said
    assert "q1 c_prec=0.50 completeness=0.00 verifiableness=1.00 element_coverage=1.00" in said
    assert "gaps: generation_gap" in said
    with RecordStore(Path("home") / "store.sqlite") as store:
        assert {s.id: s.answer for s in store.get_samples(new_run)} == {"q1": "Bananas are yellow.",
                                                                          "q2": "Bananas are yellow."}
        # the old run is as it was: its own text beside its own figures, nothing of the new text
        assert {s.id: s.answer for s in store.get_samples(old_run)}["q1"] == PRECOMPUTED["answer"]
        assert {d.sample_id: d.metrics for d in store.get_diagnostics(old_run)} == old_figures
        n_old_checks = len(store.checks_for(old_run))

    refused = RUNNER.invoke(app, [*args, "--run-id", old_run])
    assert refused.exit_code == 2 and "Traceback" not in refused.output
    assert flat(refused.output) == (
        f"error: run {old_run} evaluated other contents of 1 of these samples (q1): its figures are not theirs. "
        f"Evaluate the changed samples in a new run with `ragcourt rerun --changed {old_run} --dataset data.jsonl` "
        "(the others are copied), or give another run id")
    with RecordStore(Path("home") / "store.sqlite") as store:
        assert {s.id: s.answer for s in store.get_samples(old_run)}["q1"] == PRECOMPUTED["answer"]
        assert {d.sample_id: d.metrics for d in store.get_diagnostics(old_run)} == old_figures
        assert len(store.checks_for(old_run)) == n_old_checks

    rerun = RUNNER.invoke(app, ["rerun", "--changed", old_run, "--dataset", "data.jsonl", "--home", "home"])
    assert rerun.exit_code == 0, rerun.output
    assert "1 rows re-run, 1 rows copied from the base run" in flat(rerun.output)


# Issue 20, item 9: an endpoint that cannot answer stops `run` before the first sample (exit 2, one line naming
# the judge, the URL and the cause), a live one passes, and nothing claims other judges decided what none did.
ONE_SAMPLE = '{"id": "a", "question": "Who founded Acme?", "answer": "Ada.", "contexts": [{"id": "c1", "text": "Ada."}]}\n'


def error_lines(output: str) -> list[str]:
    """The command's error messages, rich's wrapping folded away: each runs to the next "error:" or the end."""
    return [" ".join(("error:" + part).split()) for part in output.split("error:")[1:]]


def test_a_judge_on_a_closed_port_exits_2_before_the_first_sample(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("data.jsonl").write_text(ONE_SAMPLE, encoding="utf-8")
    url = f"http://127.0.0.1:{closed_port()}/v1"
    result = RUNNER.invoke(app, ["run", "data.jsonl", "--system", "precomputed", "--judge", f"openai:j@{url}",
                                 "--home", "home"])
    assert result.exit_code == 2
    assert error_lines(result.output) == [f"error: judge 'openai:j@{url}' cannot use {url}/models: connection refused"]
    assert "✓" not in result.output and "Traceback" not in result.output
    with RecordStore(Path("home") / "store.sqlite") as store:
        assert store.list_runs() == []  # nothing evaluated


@pytest.mark.parametrize(("status", "cause"), [(401, "401 Unauthorized"), (403, "403 Forbidden")])
def test_a_refused_key_exits_2_naming_the_status(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, status: int,
                                                 cause: str) -> None:
    monkeypatch.chdir(tmp_path)
    Path("data.jsonl").write_text(ONE_SAMPLE, encoding="utf-8")
    with answering(status) as (url, asked):
        Path("jury.yaml").write_text(f"judges:\n  - model: openai:j@{url}\n    id: j\n", encoding="utf-8")
        result = RUNNER.invoke(app, ["run", "data.jsonl", "--system", "precomputed", "--config", "jury.yaml",
                                     "--home", "home"])
    assert result.exit_code == 2 and asked == ["/v1/models"]
    assert error_lines(result.output) == [f"error: judge 'j' cannot use {url}/models: {cause}"]


def test_an_openai_model_without_a_key_exits_2_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """It ended in a 111-line traceback; now one line, no request (the network guard would fail the test)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    Path("data.jsonl").write_text(ONE_SAMPLE, encoding="utf-8")
    result = RUNNER.invoke(app, ["run", "data.jsonl", "--system", "precomputed", "--judge", "openai:gpt-4o-mini",
                                 "--home", "home", "--no-check-endpoints"])  # a missing key needs no request
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert error_lines(result.output) == [
        "error: judge 'openai:gpt-4o-mini' cannot use https://api.openai.com/v1: no API key: set OPENAI_API_KEY"]


def test_a_live_server_passes_the_check_before_any_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("data.jsonl").write_text(ONE_SAMPLE, encoding="utf-8")
    with FakeOpenAIServer(responder=lambda request: "not the JSON asked for") as server:
        result = RUNNER.invoke(app, ["run", "data.jsonl", "--system", "precomputed", "--judge",
                                     f"openai:j@{server.base_url}", "--home", "home"])
        first = server.requests[0]
        n_chat = server.count(CHAT_PATH)
    assert result.exit_code == 0, result.output
    assert (first.method, first.path) == ("GET", MODELS_PATH) and server.count(MODELS_PATH) == 1 and n_chat > 0


def test_with_the_check_skipped_a_lone_dead_judge_is_said_to_have_decided_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--no-check-endpoints: the run goes on, every verdict unscored; the summary no longer says "the other
    judges decided those checks" when there is no other judge."""
    monkeypatch.chdir(tmp_path)
    Path("data.jsonl").write_text(ONE_SAMPLE, encoding="utf-8")
    url = f"http://127.0.0.1:{closed_port()}/v1"
    result = RUNNER.invoke(app, ["run", "data.jsonl", "--system", "precomputed", "--judge", f"openai:j@{url}",
                                 "--home", "home", "--no-check-endpoints"])
    assert result.exit_code == 0, result.output
    said = flat(result.output)
    assert "No other judge scored any check, so nobody decided those checks" in said
    assert "decided those checks without them" not in said
    with RecordStore(Path("home") / "store.sqlite") as store:
        (run,) = store.list_runs()
        verdicts = store.get_verdicts([c.id for c in store.checks_for(run.run_id)])
    assert verdicts and all(v.detail is not None and v.detail.startswith("connection refused:") for v in verdicts)


def test_each_listed_short_help_is_the_first_paragraph_of_the_commands_own_help() -> None:
    """`ragcourt --help` lists commands from cli.COMMANDS without importing them; the lines it shows must be
    the ones each command's help starts with."""
    from ragcourt.cli import COMMANDS, load_command

    for name, entry in COMMANDS.items():
        command = load_command(name)
        assert command is not None and command.name == name
        first_paragraph = " ".join((command.short_help or command.help or "").split("\n\n")[0].split())
        assert first_paragraph == entry.short_help, name


def test_help_imports_no_command_module_nor_heavy_library() -> None:
    import subprocess
    import sys

    probe = ("import sys\nfrom ragcourt.cli import main\nsys.argv = ['ragcourt', '--help']\n"
             "try:\n    main()\nexcept SystemExit:\n    pass\n"
             "loaded = sorted(m for m in sys.modules if m.startswith('ragcourt.commands.') or m.split('.')[0] in "
             "{'pandas', 'chromadb', 'langchain_core', 'langgraph', 'openai', 'numpy'})\n"
             "print('LOADED', loaded)\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert "calibrate" in done.stdout and "rerun" in done.stdout  # the listing is complete
    assert "LOADED []" in done.stdout


def test_a_command_runs_through_the_lazy_group(tmp_path: Path) -> None:
    result = RUNNER.invoke(app, ["graph"])
    assert result.exit_code == 0 and "graph" in result.output.lower()
    unknown = RUNNER.invoke(app, ["no-such-command"])
    assert unknown.exit_code == 2 and "No such command" in unknown.output


def test_invisible_text_is_na_and_a_misspelt_field_is_warned_about_or_refused_with_strict(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    invisible = {**PRECOMPUTED, "id": "q2", "reference_answer": "\u200b\u200b\u200e"}
    misspelt = {**PRECOMPUTED, "id": "q3", "refrence_answer": PRECOMPUTED["reference_answer"]}
    del misspelt["reference_answer"]
    Path("data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in (PRECOMPUTED, invisible, misspelt)),
                                  encoding="utf-8")
    args = ["run", "data.jsonl", "--system", "precomputed", "--judge", "lexical", "--home", "home"]
    result = RUNNER.invoke(app, [*args, "--run-id", "lenient"])
    assert result.exit_code == 0, result.output
    output = flat(result.output)
    assert ("warning: data.jsonl:3: field 'refrence_answer': is not a field of a sample, so it was kept in "
            "metadata; did you mean 'reference_answer'?") in output
    with RecordStore(tmp_path / "home" / "store.sqlite") as store:
        coverage = {d.sample_id: d.metric("element_coverage") for d in store.get_diagnostics("lenient")}
    assert coverage["q1"] is not None and coverage["q1"].value == 1.0
    # invisible text is no reference: n/a, as "" is, where it was scored 0.00 and halved the run mean
    assert coverage["q2"] is not None and coverage["q2"].value is None and coverage["q2"].na_reason is not None
    refused = RUNNER.invoke(app, [*args, "--run-id", "strict", "--strict"])
    assert refused.exit_code == 2
    assert "data.jsonl:3: field 'refrence_answer': is not a field of a sample; did you mean 'reference_answer'?" in (
        flat(refused.output))


@pytest.mark.parametrize(("command", "shown"), [
    (["run"], "needs ragcourt[otel]"), (["run"], "needs ragcourt[distributed]"), (["demo"], "needs ragcourt[otel]"),
    (["demo"], "how many HotpotQA questions [default: 10; 3 with --local]"), (["rank"], "COLUMN[,COLUMN...][@MARGIN]"),
])
def test_help_keeps_every_bracket_without_any_escape_in_the_source(command: list[str], shown: str) -> None:
    """Help strings are plain text: the CLI escapes them for Rich once, so a bracket no one escaped by hand shows."""
    result = RUNNER.invoke(app, [*command, "--help"], env={"COLUMNS": "250"})
    assert result.exit_code == 0 and shown in flat(result.output)
    assert "\\[" not in result.output


def _help_of_every_command() -> dict[str, str]:
    from ragcourt.cli import COMMANDS

    names = [[], *([name] for name in COMMANDS), ["elements", "export"], ["elements", "import"]]
    found = {}
    for words in names:
        result = RUNNER.invoke(app, [*words, "--help"], env={"COLUMNS": "250"})
        assert result.exit_code == 0, (words, result.output)
        found[" ".join(words) or "ragcourt"] = result.output
    return found


def test_no_help_shows_a_type_beside_a_flag() -> None:
    """A flag takes no value: `--help <bool>` (or `--local <bool>`) told the user to type one."""
    for name, text in _help_of_every_command().items():
        assert "<bool>" not in text, name
        assert "--help  " in text and "Show this message and exit." in text, name
    assert "<int>" in flat(RUNNER.invoke(app, ["demo", "--help"], env={"COLUMNS": "250"}).output)  # values keep theirs


def test_version_is_the_installed_distributions() -> None:
    from importlib.metadata import version

    result = RUNNER.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output.strip() == f"ragcourt {version('ragcourt')}"
    assert "--version" in RUNNER.invoke(app, ["--help"]).output


def test_report_help_says_the_report_has_one_inline_script() -> None:
    """The report inlines its table-sorting script (report.html); its help used to say "no script"."""
    for words in (["--help"], ["report", "--help"]):
        shown = flat(RUNNER.invoke(app, words, env={"COLUMNS": "250"}).output)
        assert "no script" not in shown and "one inline script sorts and filters its tables" in shown


@pytest.mark.parametrize("command", ["run", "calibrate", "rank"])
def test_judge_help_lists_every_judge_the_code_builds(command: str) -> None:
    from ragcourt.judging.baseline import BaselineRule
    from ragcourt.llm.spec import BundledModel, Provider
    from ragcourt.schema.config import BaselineModel

    shown = flat(RUNNER.invoke(app, [command, "--help"], env={"COLUMNS": "250"}).output)
    judge_line = shown[shown.index("--judge"):]
    for name in [*BaselineRule, "local (", "openai:MODEL[@URL]", *(f"local:{m}" for m in BundledModel),
                 "local:PATH.gguf"]:
        assert str(name) in judge_line, (command, name)
    assert {str(p) for p in Provider} == {"local", "openai"}  # a new provider must join judge_help's forms
    # rank refuses the learned judge (it decides yes / no checks, not A / B / Tie); the others take it
    assert (f"{BaselineModel.LEARNED} (the stacked models" in judge_line) == (command != "rank")
