// Starts Swagger UI on /docs from the locally served bundle (no CDN, no inline script).
window.addEventListener("load", function () {
  var root = document.getElementById("swagger-ui");
  if (!window.SwaggerUIBundle || !root) {
    var fallback = document.getElementById("docs-fallback");
    if (fallback) { fallback.hidden = false; }
    return;
  }
  window.ui = window.SwaggerUIBundle({
    url: root.getAttribute("data-openapi-url"),
    dom_id: "#swagger-ui",
    deepLinking: true,
    presets: [window.SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
    persistAuthorization: false,
    displayRequestDuration: true
  });
});
