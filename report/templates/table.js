// Sorting and filtering of the report's tables: a click on a header sorts by that column (numbers as numbers,
// n/a last; again: reversed); a filter box hides the rows that do not contain its text. It only reorders and
// hides existing rows: it never writes HTML, so no text of the page can become markup.
(function () {
  "use strict";
  function key(cell) {
    var text = cell.textContent.trim();  // a folded cell: its summary (the start), then the whole text
    var number = Number(text.replace(/\s*\[\d+\]$/, ""));
    return { text: text, number: text === "" || isNaN(number) ? null : number, na: text === "n/a" || text === "—" };
  }
  function compare(a, b) {
    if (a.na !== b.na) { return a.na ? 1 : -1; }
    if (a.number !== null && b.number !== null) { return a.number - b.number; }
    return a.text.localeCompare(b.text);
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    var body = table.tBodies[0];
    table.querySelectorAll("thead th").forEach(function (th, column) {
      th.setAttribute("tabindex", "0");
      th.setAttribute("title", "sort by " + th.textContent);
      function sort() {
        var descending = th.getAttribute("aria-sort") === "ascending";
        table.querySelectorAll("thead th").forEach(function (other) { other.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", descending ? "descending" : "ascending");
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (x, y) {
          var order = compare(key(x.cells[column]), key(y.cells[column]));
          return descending ? -order : order;
        });
        rows.forEach(function (row) { body.appendChild(row); });
      }
      th.addEventListener("click", sort);
      th.addEventListener("keydown", function (event) { if (event.key === "Enter") { sort(); } });
    });
  });
  document.querySelectorAll("input[data-filter]").forEach(function (input) {
    var table = document.getElementById(input.getAttribute("data-filter"));
    var count = document.getElementById(input.getAttribute("data-filter") + "-shown");
    input.addEventListener("input", function () {
      var wanted = input.value.trim().toLowerCase();
      var shown = 0;
      Array.prototype.forEach.call(table.tBodies[0].rows, function (row) {
        var keep = wanted === "" || row.textContent.toLowerCase().indexOf(wanted) !== -1;
        row.hidden = !keep;
        shown += keep ? 1 : 0;
      });
      if (count) { count.textContent = shown + " of " + table.tBodies[0].rows.length + " rows shown"; }
    });
  });
})();
