"""Requests in flight over one ragcourt run against the simulated server, and the run's wall / ideal, for each
number of samples in flight: where the end of a run waits on a few samples' sequential calls.

    python bench/in_flight.py [--samples-in-flight 64 140] [--batching joint] [--every-s 0.5]

The side by side's 140 samples (100 HotpotQA, 40 long-form), 200 ms + 50 tokens/s, LLM concurrency 32,
methods qcare + elements + reference; the server's `/sim/stats` `in_flight` is read every `--every-s` seconds.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cost_speed import bench_samples, machine, measure_ragcourt, sim_server  # noqa: E402

from ragcourt.schema.config import Batching, Method  # noqa: E402


def poll(base_url: str, every_s: float, seen: list[tuple[float, int]], done: threading.Event) -> None:
    """(seconds since the start, the server's requests in flight) every `every_s`, until `done`."""
    started = time.perf_counter()
    while not done.is_set():
        with urllib.request.urlopen(base_url.removesuffix("/v1") + "/sim/stats") as reply:
            seen.append((time.perf_counter() - started, int(json.loads(reply.read())["in_flight"])))
        done.wait(every_s)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples-in-flight", type=int, nargs="+", default=[64, 140])
    parser.add_argument("--batching", type=Batching, default=Batching.JOINT)
    parser.add_argument("--every-s", type=float, default=0.5)
    args = parser.parse_args()
    samples = bench_samples(100, 40)
    print(f"machine: {machine()}")
    for in_flight in args.samples_in_flight:
        with tempfile.TemporaryDirectory() as folder, sim_server(200.0, "--tokens-per-s", "50") as sim:
            seen: list[tuple[float, int]] = []
            done = threading.Event()
            poller = threading.Thread(target=poll, args=(sim.base_url, args.every_s, seen, done))
            poller.start()
            run = measure_ragcourt(sim, samples, args.batching, 32, in_flight, Path(folder) / "run",
                                   (Method.QCARE, Method.ELEMENTS, Method.REFERENCE), reruns=False)
            done.set()
            poller.join()
        print(f"{len(samples)} samples, {in_flight} in flight, {args.batching}: wall {run.wall_s:.2f} s, ideal "
              f"{run.ideal_s:.2f} s, wall / ideal {run.overhead:.3f}")
        print("  requests in flight (s:n): " + " ".join(f"{t:.1f}:{n}" for t, n in seen))


if __name__ == "__main__":
    main()
