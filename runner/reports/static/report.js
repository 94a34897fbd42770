// report.html: filters and sorting of the task table. No network, no eval, no HTML from data:
// it reads data-* attributes the page was rendered with and toggles rows' `hidden`.
(function () {
  "use strict";
  var table = document.getElementById("task-table");
  if (!table) { return; }
  var body = table.tBodies[0];
  var rows = Array.prototype.slice.call(body.rows);
  var filters = {state: "f-state", category: "f-category", regression: "f-regression", source: "f-source"};
  var text = document.getElementById("f-text");
  var count = document.getElementById("shown-count");

  function apply() {
    var want = {};
    Object.keys(filters).forEach(function (key) { want[key] = document.getElementById(filters[key]).value; });
    var needle = text.value.trim().toLowerCase();
    var shown = 0;
    rows.forEach(function (row) {
      var ok = Object.keys(want).every(function (key) { return !want[key] || row.dataset[key] === want[key]; });
      if (ok && needle) { ok = row.dataset.id.toLowerCase().indexOf(needle) !== -1; }
      row.hidden = !ok;
      if (ok) { shown += 1; }
    });
    count.textContent = String(shown);
  }

  Object.keys(filters).forEach(function (key) {
    document.getElementById(filters[key]).addEventListener("change", apply);
  });
  text.addEventListener("input", apply);
  document.getElementById("filters").addEventListener("submit", function (e) { e.preventDefault(); });

  var buttons = Array.prototype.slice.call(table.querySelectorAll("th button[data-sort]"));
  buttons.forEach(function (button) {
    button.addEventListener("click", function () {
      var key = button.dataset.sort;
      var numeric = button.dataset.num === "1";
      var dir = button.dataset.dir === "asc" ? "desc" : "asc";
      buttons.forEach(function (b) { delete b.dataset.dir; });
      button.dataset.dir = dir;
      var sign = dir === "asc" ? 1 : -1;
      var keyed = rows.map(function (row, i) {
        var v = row.dataset[key];
        return {row: row, i: i, v: numeric ? parseFloat(v) : v};
      });
      keyed.sort(function (a, b) {
        if (a.v < b.v) { return -sign; }
        if (a.v > b.v) { return sign; }
        return a.i - b.i;
      });
      var frag = document.createDocumentFragment();
      keyed.forEach(function (k) { frag.appendChild(k.row); });
      body.appendChild(frag);
    });
  });

  // A filter chosen before a reload (the browser keeps form values) applies at once.
  apply();
}());
