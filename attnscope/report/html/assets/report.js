// Draws the figures held in the page's JSON data block.  The data is parsed, never evaluated.
(function () {
  "use strict";
  var block = document.getElementById("attnscope-data");
  var data = JSON.parse(block.textContent);
  var config = { displaylogo: false, responsive: true };
  var jobs = data.figures.map(function (f) {
    return Plotly.newPlot(document.getElementById(f.id), f.data, f.layout, config);
  });
  Promise.all(jobs).then(
    function () { document.body.setAttribute("data-plots-rendered", String(jobs.length)); },
    function (e) { document.body.setAttribute("data-plots-error", String(e)); console.error(e); }
  );
})();
