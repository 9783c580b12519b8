"""CPU per check of the semantic judge with each encoder, on the shared HotpotQA questions (subquery_in_chunk:
each question against each of its ten paragraphs) and WiCE claims (claim_supported against the cited page).

Run: nice -n 10 python bench/encoder_cost.py --encoder minilm|e5|e5+minilm [--set hotpotqa|wice] [--limit N]
One process, one thread per encoder (stores.encoders.INTRA_OP_THREADS); the model is loaded before the clock
starts; the judge's cache embeds each text once, as in a run.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import time
from pathlib import Path

from ragcourt.data.validity_sets import load_hotpotqa_paragraphs, load_wice
from ragcourt.judging import BaselineJudge, BaselineRule
from ragcourt.stores.encoders import EncoderChoice
from ragcourt.validity.measure import hotpotqa_checks, wice_checks

ROOT = Path(__file__).resolve().parent.parent
SETS = {"hotpotqa": ROOT / "data" / "hotpotqa" / "dev_sample_100.jsonl",
        "wice": Path("../shared/data/wice/claim_dev_sample_60.jsonl")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--encoder", default="minilm")
    parser.add_argument("--set", choices=sorted(SETS), default="hotpotqa")
    parser.add_argument("--file", type=Path, help="the set's file (default: the shared slice)")
    parser.add_argument("--limit", type=int, help="only the first N questions or claims")
    args = parser.parse_args()
    path = args.file or SETS[args.set]
    if args.set == "hotpotqa":
        items = load_hotpotqa_paragraphs(path)
        labelled = hotpotqa_checks(items[: args.limit] if args.limit else items)
    else:
        claims = load_wice(path)
        labelled = wice_checks(claims[: args.limit] if args.limit else claims)
    checks = [entry.check for entry in labelled]
    judge = BaselineJudge(BaselineRule.SEMANTIC, encoder=EncoderChoice.parse(args.encoder))
    asyncio.run(judge.judge(checks[0].kind, [checks[0].model_copy(update={"target_text": "warm up"})]))
    started = time.process_time()
    asyncio.run(judge.judge(checks[0].kind, checks))
    cpu = time.process_time() - started
    print(f"{judge.judge_id} on {args.set} ({path.name}, {len(checks)} {checks[0].kind} checks; "
          f"{platform.machine()}): {1000 * cpu / len(checks):.1f} ms CPU per check, {cpu:.1f} s in all")


if __name__ == "__main__":
    main()
