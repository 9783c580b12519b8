// Keyboard shortcuts of the review desk. Every key clicks a real button of the form, so the page works
// the same without this script. Nothing here writes HTML.
"use strict";
(function () {
  const form = document.getElementById("decision-form");
  if (!form) return;
  const byId = (id) => document.getElementById(id);
  document.addEventListener("keydown", (event) => {
    const target = event.target;
    const typing = target instanceof HTMLInputElement || target instanceof HTMLTextAreaElement;
    if (typing) {
      if (event.key === "Escape") target.blur();
      if (event.key === "Enter" && target.id === "score") {
        event.preventDefault();
        byId("score-button").click();
      }
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.key === "c" || event.key === "e") {
      const field = byId(event.key === "c" ? "comment" : "score");
      if (field) { event.preventDefault(); field.focus(); }
      return;
    }
    const button = form.querySelector(`button[data-key="${CSS.escape(event.key)}"]`);
    if (button && !button.disabled) {
      event.preventDefault();
      const reviewer = byId("reviewer");
      if (reviewer && !reviewer.value.trim()) { reviewer.focus(); return; }
      form.requestSubmit(button);
    }
  });
})();
