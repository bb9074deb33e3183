// Sorts the table of learners: click a column's heading (again to reverse), or open the page with
// #sort=KEY or #sort=-KEY (descending), e.g. index.html#sort=-total. Nothing else runs on the page.
(function () {
  var table = document.getElementById("learners");
  if (!table) {
    return;
  }
  var body = table.tBodies[0];
  var heads = Array.prototype.slice.call(table.tHead.rows[0].cells);

  function sortBy(key, descending) {
    var index = heads.findIndex(function (h) { return h.dataset.key === key; });
    if (index < 0) {
      return;
    }
    var numeric = heads[index].dataset.type === "number";
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = a.cells[index].dataset.value;
      var y = b.cells[index].dataset.value;
      var order = numeric ? Number(x) - Number(y) : x.localeCompare(y);
      if (order === 0) {
        order = a.dataset.learner.localeCompare(b.dataset.learner);
      }
      return descending ? -order : order;
    });
    rows.forEach(function (row) { body.appendChild(row); });
    heads.forEach(function (h) { h.removeAttribute("aria-sort"); });
    heads[index].setAttribute("aria-sort", descending ? "descending" : "ascending");
  }

  function fromLocation() {
    var match = /^#sort=(-?)(.+)$/.exec(window.location.hash);
    if (match) {
      sortBy(decodeURIComponent(match[2]), match[1] === "-");
    }
  }

  heads.forEach(function (head) {
    head.querySelector("button").addEventListener("click", function () {
      var descending = head.getAttribute("aria-sort") === "ascending";
      window.location.hash = "sort=" + (descending ? "-" : "") + encodeURIComponent(head.dataset.key);
    });
  });
  window.addEventListener("hashchange", fromLocation);
  fromLocation();
})();
