// Polls /api/progress and shows it; text only (textContent), never HTML.
"use strict";
(function () {
  const bar = document.getElementById("run-progress");
  const status = document.getElementById("run-status");
  const recent = document.getElementById("recent");
  async function poll() {
    try {
      const response = await fetch("/api/progress", { credentials: "same-origin" });
      const p = await response.json();
      bar.max = Math.max(p.samples, 1);
      bar.value = p.finished;
      status.textContent = `${p.finished} of ${p.samples} questions finished (${p.failed} failed) · ` +
        `${p.running ? "running" : "not running"} · ${p.pending_reviews} escalations awaiting review · ` +
        `metrics ${p.rescore}`;
      recent.replaceChildren(...p.recent.map((row) => {
        const item = document.createElement("li");
        item.textContent = `${row.status} · ${row.sample_id} · ${row.question} · ${row.escalated} escalated`;
        return item;
      }));
    } catch (error) {
      status.textContent = `progress unavailable: ${error}`;
    }
  }
  poll();
  setInterval(poll, 2000);
})();
