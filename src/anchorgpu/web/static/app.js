// AnchorGPU page behaviour: our own, tiny, optional (every form works without it).
// A form marked data-once disables its submit button after the first submit, so a double click
// sends one request; the idempotency key in the form makes a resubmission book once anyway.
document.addEventListener("submit", function (event) {
  var form = event.target;
  if (!(form instanceof HTMLFormElement) || !form.hasAttribute("data-once")) return;
  if (form.dataset.sent === "1") { event.preventDefault(); return; }
  form.dataset.sent = "1";
  form.querySelectorAll("button[type=submit]").forEach(function (b) { b.disabled = true; });
});
// Forms marked data-confirm ask before submitting (terminate is final).
document.addEventListener("submit", function (event) {
  var form = event.target;
  if (form instanceof HTMLFormElement && form.dataset.confirm && !window.confirm(form.dataset.confirm)) {
    event.preventDefault();
    delete form.dataset.sent;
  }
}, true);
// Buttons marked data-copy="ID" copy the text of element ID (launch commands and files) and say so.
document.addEventListener("click", function (event) {
  var button = event.target;
  if (!(button instanceof HTMLButtonElement) || !button.dataset.copy) return;
  var source = document.getElementById(button.dataset.copy);
  if (!source || !navigator.clipboard) return;
  navigator.clipboard.writeText(source.textContent).then(function () {
    var label = button.textContent;
    button.textContent = button.dataset.copied || "Copied";
    setTimeout(function () { button.textContent = label; }, 1500);
  });
});
// The quote builder (form data-preview="URL") shows the total as its fields change: a debounced GET of the
// server's preview fragment (nothing stored or charged). Changing the offering reloads the builder, since the
// regions and options depend on it. Without script the form still prices on submit.
(function () {
  var form = document.querySelector("form[data-preview]");
  if (!form) return;
  var output = document.getElementById("quote-preview");
  var timer = null, sent = 0;
  function query() {
    var params = new URLSearchParams(new FormData(form));
    params.delete("csrf_token");
    return params.toString();
  }
  function refresh() {
    var mine = ++sent;
    form.setAttribute("aria-busy", "true");
    fetch(form.dataset.preview + "?" + query(), { headers: { "Accept": "text/html" }, credentials: "same-origin" })
      .then(function (r) { return r.text(); })
      .then(function (html) { if (mine === sent && output) { output.innerHTML = html; } })
      .finally(function () { if (mine === sent) form.removeAttribute("aria-busy"); });
  }
  form.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(refresh, 250); });
  form.addEventListener("change", function (event) {
    if (event.target && event.target.name === "offering") {
      var p = new URLSearchParams({ offering: event.target.value, quantity: form.elements.quantity.value, term: form.elements.term.value });
      window.location.assign("/quote?" + p.toString());
      return;
    }
    clearTimeout(timer); timer = setTimeout(refresh, 100);
  });
})();
// Scatter points (web/charts.py) name their offering under the chart when focused or tapped; without script each
// point is still a link to its table row.
(function () {
  var chart = document.getElementById("scatter");
  var said = document.getElementById("scatter-selected");
  if (!chart || !said) return;
  function select(point) {
    chart.querySelectorAll("a.pt.selected").forEach(function (p) { p.classList.remove("selected"); });
    document.querySelectorAll("tr.selected").forEach(function (r) { r.classList.remove("selected"); });
    point.classList.add("selected");
    said.textContent = point.dataset.name;
    var row = document.getElementById((point.getAttribute("href") || "").slice(1));
    if (row) row.classList.add("selected");
  }
  chart.addEventListener("focusin", function (event) {
    var point = event.target.closest ? event.target.closest("a.pt") : null;
    if (point) select(point);
  });
  chart.addEventListener("click", function (event) {
    var point = event.target.closest ? event.target.closest("a.pt") : null;
    if (!point) return;
    event.preventDefault();  // a tap names the point here and marks its row; without script the link goes to the row
    select(point);
  });
})();
// The planner form (data-live="ID") answers as you type: a debounced GET of the same page, whose answer
// replaces element ID; the address follows, so the answer can be shared. Without script, "Plan" submits.
(function () {
  var form = document.querySelector("form[data-live]");
  if (!form) return;
  var target = document.getElementById(form.dataset.live);
  var timer = null, sent = 0;
  function query() {
    var params = new URLSearchParams();
    new FormData(form).forEach(function (value, key) { if (String(value).trim() !== "") params.append(key, value); });
    return params.toString();
  }
  function refresh() {
    timer = null;
    if (!form.elements.model || String(form.elements.model.value).trim() === "") return;
    var mine = ++sent, q = query();
    form.setAttribute("aria-busy", "true");
    fetch(form.action + "?" + q, { headers: { "Accept": "text/html" }, credentials: "same-origin" })
      .then(function (r) {
        if (r.status === 429 || r.status === 503) {  // the server's per-address limit: ask again when it says
          var wait = Math.min(parseInt(r.headers.get("Retry-After") || "1", 10) || 1, 60);
          if (mine === sent) { clearTimeout(timer); timer = setTimeout(refresh, wait * 1000 + 50); }
          return null;
        }
        return r.text();
      })
      .then(function (html) {
        if (html === null || mine !== sent || !target) return;
        var fresh = new DOMParser().parseFromString(html, "text/html").getElementById(target.id);
        if (fresh) { target.innerHTML = fresh.innerHTML; history.replaceState(null, "", form.action + "?" + q); }
      })
      .catch(function () { /* offline or refused: the form still submits */ })
      .finally(function () { if (mine === sent && !timer) form.removeAttribute("aria-busy"); });
  }
  form.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(refresh, 350); });
  form.addEventListener("change", function () { clearTimeout(timer); timer = setTimeout(refresh, 150); });
})();
