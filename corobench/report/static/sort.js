// Sort a table by the clicked column header (or Enter/Space on it): numbers by their data-sort
// value, text by text; cells without a value (FAILED, —) stay last in either direction.
(function () {
  "use strict";
  function value(row, col) {
    var cell = row.cells[col];
    if (!cell) { return ""; }
    return cell.hasAttribute("data-sort") ? cell.getAttribute("data-sort") : cell.textContent.trim();
  }
  function sortBy(table, th, col) {
    var ascending = th.getAttribute("aria-sort") !== "ascending";
    Array.prototype.forEach.call(th.parentNode.cells, function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    var numeric = th.getAttribute("data-type") === "number";
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = value(a, col), y = value(b, col);
      if (x === "" || y === "") { return (x === "") - (y === ""); }
      var d = numeric ? parseFloat(x) - parseFloat(y) : x.localeCompare(y, undefined, { numeric: true });
      return ascending ? d : -d;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, col) {
      th.tabIndex = 0;
      th.addEventListener("click", function () { sortBy(table, th, col); });
      th.addEventListener("keydown", function (e) {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sortBy(table, th, col); }
      });
    });
  });
})();
