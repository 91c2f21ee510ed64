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
    button.textContent = "Copied";
    setTimeout(function () { button.textContent = label; }, 1500);
  });
});
