"""How fast are the two offline judges on long evidence? (issue 21, item 6)

Builds a WiCE-shaped precomputed dataset from the shared WiCE dev slice
(`../shared/data/wice/claim_dev_sample_60.jsonl`): per claim one row whose question, answer and reference are
the claim and whose one context chunk is the claim's evidence sentences joined by spaces (about 8,500
characters on average). It then runs `ragcourt run DATA --system precomputed --method qcare --judge lexical
--judge semantic --home TMP` in a child process (the user's command, model loading and start-up included) and
prints wall seconds, CPU seconds (user + system of the child and everything it started) per claim and the
child's peak RSS. With `--dump PATH` it writes every verdict (check id, judge, label, probabilities, score) as
JSON lines sorted by check id, so two code versions can be compared verdict for verdict (`--compare OLD NEW`).

Run: python bench/wice_offline_judges.py [--claims 20] [--dump verdicts.jsonl]
     python bench/wice_offline_judges.py --compare before.jsonl after.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
WICE = REPO.parent / "shared" / "data" / "wice" / "claim_dev_sample_60.jsonl"


def wice_rows(path: Path, n: int) -> list[dict[str, Any]]:
    """The first n WiCE claims as precomputed ragcourt rows (see the module docstring)."""
    rows = []
    for line_no, line in enumerate(path.read_text(encoding="utf-8").splitlines()[:n], start=1):
        record = json.loads(line)
        claim, evidence = record["claim"], record["evidence"]
        if not isinstance(evidence, list) or not evidence:
            raise ValueError(f"{path}:{line_no}: field 'evidence' must be a non-empty list of sentences")
        rows.append({"id": f"wice-{line_no}", "question": claim, "answer": claim, "reference_answer": claim,
                     "contexts": [{"id": f"wice-{line_no}-evidence", "text": " ".join(evidence)}]})
    return rows


def dump_verdicts(home: Path, out: Path) -> int:
    """Every verdict of the one run in `home`, as sorted JSON lines; returns how many."""
    from ragcourt.runs.workspace import Workspace

    store = Workspace(home).open_store()
    try:
        (run,) = store.list_runs()
        checks = store.checks_for(run.run_id)
        verdicts = store.get_verdicts([c.id for c in checks])
    finally:
        store.close()
    lines = sorted(
        json.dumps({"check_id": v.check_id, "judge_id": v.judge_id, "status": str(v.status),
                    "label": None if v.label is None else str(v.label), "score": v.score,
                    "probabilities": {str(k): p for k, p in (v.probabilities or {}).items()}}, sort_keys=True)
        for v in verdicts
    )
    out.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return len(lines)


def compare(old: Path, new: Path, tolerance: float = 1e-9) -> int:
    """Prints how many verdicts differ (labels, statuses, scores, probabilities beyond `tolerance`)."""
    first = [json.loads(line) for line in old.read_text(encoding="utf-8").splitlines()]
    second = [json.loads(line) for line in new.read_text(encoding="utf-8").splitlines()]
    if len(first) != len(second):
        print(f"{old}: {len(first)} verdicts, {new}: {len(second)}")
        return 1
    differ = 0
    for a, b in zip(first, second, strict=True):
        same = {k: v for k, v in a.items() if k != "probabilities"} == {k: v for k, v in b.items()
                                                                           if k != "probabilities"}
        pa, pb = a["probabilities"], b["probabilities"]
        same = same and pa.keys() == pb.keys() and all(abs(pa[k] - pb[k]) <= tolerance for k in pa)
        differ += not same
    print(f"{len(first)} verdicts compared: {differ} differ (labels, statuses, scores; probabilities to {tolerance})")
    return int(differ > 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--claims", type=int, default=20)
    parser.add_argument("--wice", type=Path, default=WICE)
    parser.add_argument("--dump", type=Path, help="write every verdict as sorted JSON lines")
    parser.add_argument("--compare", type=Path, nargs=2, metavar=("OLD", "NEW"))
    args = parser.parse_args()
    if args.compare:
        sys.exit(compare(*args.compare))
    rows = wice_rows(args.wice, args.claims)
    chars = [len(row["contexts"][0]["text"]) for row in rows]
    with tempfile.TemporaryDirectory() as tmp:
        home, data = Path(tmp) / "home", Path(tmp) / "wice.jsonl"
        data.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
        command = [str(Path(sys.executable).with_name("ragcourt")), "run", str(data), "--system", "precomputed",
                   "--method", "qcare", "--judge", "lexical", "--judge", "semantic", "--home", str(home)]
        start = time.perf_counter()
        done = subprocess.run(command, cwd=tmp, capture_output=True, text=True, env=os.environ | {"COLUMNS": "200"})
        wall = time.perf_counter() - start
        if done.returncode != 0:
            sys.exit(f"ragcourt run failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = usage.ru_utime + usage.ru_stime
        n_verdicts = dump_verdicts(home, args.dump) if args.dump else None
    print(f"{len(rows)} WiCE claims, evidence {sum(chars) / len(chars):,.0f} characters on average "
          f"(min {min(chars):,}, max {max(chars):,}); ragcourt run --method qcare --judge lexical --judge semantic")
    print(f"wall {wall:.1f} s; CPU {cpu:.1f} s = {cpu / len(rows):.2f} s per claim; "
          f"peak RSS {usage.ru_maxrss / 1024:.0f} MB")  # Linux reports ru_maxrss in KiB
    if n_verdicts is not None:
        print(f"{n_verdicts} verdicts written to {args.dump}")


if __name__ == "__main__":
    main()
