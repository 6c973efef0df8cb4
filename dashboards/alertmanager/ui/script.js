// The active alerts Alertmanager holds, from its API on the same address (served as
// /script.js: the one script path Alertmanager serves from --web.ui-path). Text goes in
// with textContent only.
"use strict";

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, value);
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(typeof child === "string" ? document.createTextNode(child) : child);
  }
  return node;
}

async function get(path) {
  const response = await fetch(path);
  if (!response.ok) throw new Error(`${path}: ${response.status} ${response.statusText}`);
  return response.json();
}

function row(alert) {
  const labels = Object.entries(alert.labels)
    .filter(([key]) => key !== "alertname" && key !== "severity")
    .sort()
    .map(([key, value]) => el("span", {}, `${key}=${value}`));
  const notes = alert.annotations || {};
  const severity = alert.labels.severity || "";
  return el(
    "tr",
    { class: "alert", "data-alertname": alert.labels.alertname },
    el("td", {}, el("strong", {}, alert.labels.alertname)),
    el("td", { class: severity }, severity),
    el("td", {}, alert.status.state),
    el("td", { class: "labels" }, ...labels),
    el("td", {}, notes.summary || "", el("br"), el("small", {}, notes.description || "")),
    el("td", {}, (alert.receivers || []).map((r) => r.name).join(", ")),
    el("td", {}, notes.runbook_url ? el("code", {}, notes.runbook_url) : ""),
    el("td", {}, alert.startsAt),
  );
}

async function main() {
  const out = document.getElementById("main");
  try {
    const [alerts, status] = await Promise.all([get("api/v2/alerts"), get("api/v2/status")]);
    const header = el("p", { class: "note" }, `Alertmanager ${status.versionInfo.version}, up since ${status.uptime}. `,
      "Routing: dashboards/alertmanager/alertmanager.yml; API: ", el("a", { href: "api/v2/alerts" }, "/api/v2/alerts"));
    if (!alerts.length) {
      out.replaceChildren(header, el("p", {}, "No active alerts."));
    } else {
      const head = el("tr", {}, ...["alert", "severity", "state", "labels", "summary", "receivers", "runbook", "since"].map((h) => el("th", {}, h)));
      alerts.sort((a, b) => a.labels.alertname.localeCompare(b.labels.alertname));
      out.replaceChildren(header, el("table", {}, head, ...alerts.map(row)));
    }
  } catch (err) {
    out.replaceChildren(el("p", { class: "error" }, String(err.message || err)));
  }
  document.body.dataset.ready = "true";
}

main();
