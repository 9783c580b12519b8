"""Build the files of examples/own_data/ from the bundled HotpotQA sample (CC BY-SA 4.0).

    python examples/own_data/build.py [OUT_DIR]

Writes, beside this script (or into OUT_DIR):

* corpus.jsonl      every paragraph of the chosen questions, as {id, title, text}
* questions.jsonl   the questions with a reference answer, gold answers and the gold paragraphs (titles, texts)
* answers.jsonl     the questions with precomputed contexts and answers (what your app would log)
* systems/*.jsonl   three systems' answer files to rank: one that reads three paragraphs, one that reads one,
                    and one that retrieves nothing and says it does not know

The two systems are deliberately simple and need no model: each ranks the question's paragraphs by the
words they share with the question and answers with the sentence that shares most. Deterministic: the
same files every time.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE.parent.parent / "data" / "hotpotqa" / "dev_sample_100.jsonl"
QUESTIONS = 8  # the first questions whose gold answer is a span, not "yes" / "no"
WORD = re.compile(r"\w+")
STOP = frozenset({"a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "had", "has", "have",
                  "he", "her", "his", "in", "is", "it", "its", "of", "on", "or", "she", "that", "the",
                  "their", "they", "this", "to", "was", "were", "what", "when", "where", "which", "who",
                  "whom", "whose", "why", "with"})


def words(text: str) -> set[str]:
    return {w for w in WORD.findall(text.lower()) if w not in STOP}


def sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if s.strip()]


def ranked(question: str, paragraphs: list[dict]) -> list[dict]:
    asked = words(question)
    return sorted(paragraphs, key=lambda p: (-len(asked & words(p["title"] + " " + p["text"])), p["id"]))


def answer(question: str, chunks: list[dict]) -> str:
    asked = words(question)
    candidates = [s for chunk in chunks for s in sentences(chunk["text"])]
    return max(candidates, key=lambda s: len(asked & words(s)))  # max keeps the first of equals


def main(out: Path = HERE) -> None:
    rows = [json.loads(line) for line in SOURCE.read_text(encoding="utf-8").splitlines()]
    chosen = [r for r in rows if r["answers_objects"][0]["spans"][0].lower() not in ("yes", "no")][:QUESTIONS]
    corpus, questions, answers = [], [], []
    systems: dict[str, list[dict]] = {"reads_three": [], "reads_one": [], "closed_book": []}
    for row in chosen:
        qid = row["question_id"][:12]
        paragraphs = []
        for n, context in enumerate(row["contexts"]):
            paragraph = {"id": f"{qid}-p{n}", "title": context["title"], "text": context["paragraph_text"]}
            paragraphs.append(paragraph)
            corpus.append(paragraph)
        spans = row["answers_objects"][0]["spans"]
        gold = [p for p, c in zip(paragraphs, row["contexts"], strict=True) if c["is_supporting"]]
        question = {"id": qid, "question": row["question_text"], "reference_answer": spans[0],
                    "gold_answers": spans, "gold_titles": [p["title"] for p in gold], "gold_documents": gold}
        questions.append(question)
        order = ranked(row["question_text"], paragraphs)
        for name, k in (("reads_three", 3), ("reads_one", 1)):
            contexts = order[:k]
            systems[name].append({"id": qid, "question": row["question_text"],
                                  "answer": answer(row["question_text"], contexts), "contexts": contexts})
        systems["closed_book"].append({"id": qid, "question": row["question_text"], "answer": "I don't know.",
                                       "contexts": []})
        answers.append({**question, "contexts": systems["reads_three"][-1]["contexts"],
                        "answer": systems["reads_three"][-1]["answer"]})
    write(out / "corpus.jsonl", corpus)
    write(out / "questions.jsonl", questions)
    write(out / "answers.jsonl", answers)
    for name, rows_of_system in systems.items():
        write(out / "systems" / f"{name}.jsonl", rows_of_system)


def write(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
