// otel-compaction's trace view: Jaeger's HTTP API on the same address, drawn as a search
// list (/search) and a span tree (/trace/<id>). Text goes in with textContent only.
"use strict";

const COMPACTION = "compaction";
const FINDING = "compaction.finding";
const FLAG_PREFIX = "compaction.flag.";
const FINDING_KIND = "compaction.finding.kind";
const FLAG_REASON = "compaction.flag.reason";

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (key === "class") node.className = value;
    else node.setAttribute(key, value);
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(typeof child === "string" ? document.createTextNode(child) : child);
  }
  return node;
}

async function api(path) {
  const response = await fetch(path);
  const body = await response.json().catch(() => ({}));
  if (!response.ok) {
    const why = (body.errors || []).map((e) => e.msg).join("; ") || response.statusText;
    throw new Error(`${path}: ${response.status} ${why}`);
  }
  return body.data || [];
}

// Tags as Jaeger's UI puts them in its URL ({"k":"v"}) or as typed (k=v k2=v2).
function parseTags(text) {
  const trimmed = (text || "").trim();
  if (!trimmed) return {};
  if (trimmed.startsWith("{")) return JSON.parse(trimmed);
  const tags = {};
  for (const pair of trimmed.split(/\s+/)) {
    const at = pair.indexOf("=");
    if (at > 0) tags[pair.slice(0, at)] = pair.slice(at + 1);
  }
  return tags;
}

function tagMap(span) {
  const out = {};
  for (const tag of span.tags || []) out[tag.key] = tag.value;
  return out;
}

function ms(micros) {
  if (micros >= 1e6) return `${(micros / 1e6).toFixed(2)} s`;
  return micros >= 1000 ? `${(micros / 1000).toFixed(1)} ms` : `${micros} µs`;
}

// Links to the trace's compaction and finding spans, flagged ones named by their flags.
function jumpList(spans) {
  const links = spans
    .filter((s) => s.operationName === COMPACTION || s.operationName === FINDING)
    .sort((a, b) => a.startTime - b.startTime)
    .map((span) => {
      const tags = tagMap(span);
      const flags = Object.keys(tags).filter((k) => k.startsWith(FLAG_PREFIX) && tags[k] === true);
      const label = span.operationName === FINDING ? `finding: ${tags[FINDING_KIND]}` : flags.length ? `compaction (${flags.join(", ")})` : "compaction";
      return el("a", { href: `#span-${span.spanID}`, class: span.operationName === FINDING || flags.length ? "badge flag" : "badge compaction" }, label);
    });
  return links.length ? el("p", { class: "jump" }, "Jump to: ", ...links) : null;
}

function badges(spans) {
  const out = [];
  const compactions = spans.filter((s) => s.operationName === COMPACTION).length;
  if (compactions) out.push(el("span", { class: "badge compaction" }, `${compactions} compaction`));
  const flags = new Set();
  for (const span of spans) {
    const tags = tagMap(span);
    for (const [key, value] of Object.entries(tags)) {
      if (key.startsWith(FLAG_PREFIX) && value === true) flags.add(key);
    }
    if (span.operationName === FINDING) flags.add(`finding: ${tags[FINDING_KIND]}`);
  }
  for (const flag of [...flags].sort()) {
    out.push(el("span", { class: flag.startsWith("finding") ? "badge finding" : "badge flag" }, flag));
  }
  return out;
}

async function showSearch(main, params) {
  const service = params.get("service");
  if (!service) {
    main.replaceChildren(el("p", { class: "note" }, "Choose a service, add tags if you like, then Find Traces."));
    return;
  }
  const query = new URLSearchParams({
    service,
    limit: params.get("limit") || "20",
    lookback: params.get("lookback") || "1h",
  });
  const tags = parseTags(params.get("tags"));
  if (Object.keys(tags).length) query.set("tags", JSON.stringify(tags));
  const traces = await api(`/api/traces?${query}`);
  if (!traces.length) {
    main.replaceChildren(el("p", { class: "note" }, `No traces of ${service} match.`));
    return;
  }
  const rows = traces
    .map((trace) => ({ trace, start: Math.min(...trace.spans.map((s) => s.startTime)) }))
    .sort((a, b) => b.start - a.start)
    .map(({ trace, start }) => {
      const root = trace.spans.find((s) => !(s.references || []).some((r) => r.refType === "CHILD_OF")) || trace.spans[0];
      const services = [...new Set(Object.values(trace.processes).map((p) => p.serviceName))].sort();
      return el(
        "tr",
        { class: "trace" },
        el("td", {}, el("a", { href: `/trace/${trace.traceID}` }, root.operationName)),
        el("td", {}, services.join(", ")),
        el("td", {}, `${trace.spans.length} spans`),
        el("td", {}, ...badges(trace.spans)),
        el("td", {}, new Date(start / 1000).toISOString()),
      );
    });
  const head = el("tr", {}, ...["trace", "services", "spans", "compactions and findings", "start (UTC)"].map((h) => el("th", {}, h)));
  main.replaceChildren(el("p", {}, `${traces.length} trace(s)`), el("table", { class: "traces" }, head, ...rows));
}

function tagTable(span, process) {
  const rows = (span.tags || [])
    .slice()
    .sort((a, b) => a.key.localeCompare(b.key))
    .map((tag) => el("tr", {}, el("td", { class: "key" }, tag.key), el("td", {}, String(tag.value))));
  rows.push(el("tr", {}, el("td", { class: "key" }, "service.name"), el("td", {}, process.serviceName)));
  for (const ref of span.references || []) {
    if (ref.refType === "CHILD_OF" && ref.traceID === span.traceID) continue;
    rows.push(
      el("tr", {}, el("td", { class: "key" }, `link (${ref.refType})`),
        el("td", {}, el("a", { href: `/trace/${ref.traceID}` }, `${ref.traceID} / ${ref.spanID}`))),
    );
  }
  return el("table", { class: "tags" }, ...rows);
}

function spanRow(span, trace, depth, t0, total) {
  const process = trace.processes[span.processID] || { serviceName: "?" };
  const tags = tagMap(span);
  const kind = span.operationName === FINDING ? "finding" : span.operationName === COMPACTION ? "compaction" : "";
  const extra = [];
  if (span.operationName === FINDING) extra.push(el("span", { class: "badge finding" }, String(tags[FINDING_KIND])));
  for (const [key, value] of Object.entries(tags)) {
    if (key.startsWith(FLAG_PREFIX) && value === true) extra.push(el("span", { class: "badge flag" }, `${key}=true`));
  }
  const reason = tags[FLAG_REASON] ? el("div", { class: "reason" }, String(tags[FLAG_REASON])) : null;
  const left = total ? ((span.startTime - t0) / total) * 100 : 0;
  const width = total ? Math.max((span.duration / total) * 100, 0.3) : 100;
  const details = el(
    "details",
    {},
    el("summary", {}, el("span", { class: "svc" }, process.serviceName), el("span", { class: "op" }, span.operationName),
      el("span", { class: "dur" }, ms(span.duration)), " ", ...extra),
    tagTable(span, process),
  );
  if (kind) details.open = true;
  const bar = el("div", { class: "bar" }, el("span", { style: `left:${left}%;width:${width}%` }));
  return el("div", { class: `span ${kind}`, id: `span-${span.spanID}`, style: `margin-left:${depth * 18}px` }, details, reason, bar);
}

async function showTrace(main, traceID) {
  const [trace] = await api(`/api/traces/${encodeURIComponent(traceID)}`);
  if (!trace) throw new Error(`no trace ${traceID}`);
  const byID = new Map(trace.spans.map((s) => [s.spanID, s]));
  const children = new Map();
  const roots = [];
  for (const span of trace.spans) {
    // Under its parent; a span whose parent is elsewhere but that links to a span of this
    // trace (the processor's finding links to its compaction) goes under that span.
    const refs = (span.references || []).filter((r) => r.traceID === trace.traceID && byID.has(r.spanID));
    const parent = refs.find((r) => r.refType === "CHILD_OF") || refs.find((r) => r.refType === "FOLLOWS_FROM");
    if (parent) {
      if (!children.has(parent.spanID)) children.set(parent.spanID, []);
      children.get(parent.spanID).push(span);
    } else roots.push(span);
  }
  const t0 = Math.min(...trace.spans.map((s) => s.startTime));
  const total = Math.max(...trace.spans.map((s) => s.startTime + s.duration)) - t0;
  const rows = [];
  const walk = (span, depth) => {
    rows.push(spanRow(span, trace, depth, t0, total));
    for (const child of (children.get(span.spanID) || []).sort((a, b) => a.startTime - b.startTime)) walk(child, depth + 1);
  };
  for (const root of roots.sort((a, b) => a.startTime - b.startTime)) walk(root, 0);
  main.replaceChildren(
    el("h2", {}, `Trace ${trace.traceID}`),
    el("p", {}, `${trace.spans.length} spans, ${ms(total)}, from ${new Date(t0 / 1000).toISOString()} `, ...badges(trace.spans)),
    jumpList(trace.spans),
    ...rows,
  );
  document.title = `Trace ${trace.traceID} · otel-compaction`;
}

async function fillForm(params) {
  const select = document.getElementById("service");
  const services = (await api("/api/services")).sort();
  select.replaceChildren(el("option", { value: "" }, "—"), ...services.map((s) => el("option", { value: s }, s)));
  select.value = params.get("service") || "";
  document.getElementById("tags").value = params.get("tags") ? formatTags(params.get("tags")) : "";
  if (params.get("lookback")) document.getElementById("lookback").value = params.get("lookback");
  if (params.get("limit")) document.getElementById("limit").value = params.get("limit");
}

function formatTags(text) {
  try {
    return Object.entries(parseTags(text)).map(([k, v]) => `${k}=${v}`).join(" ");
  } catch {
    return text;
  }
}

async function main() {
  const out = document.getElementById("main");
  const params = new URLSearchParams(location.search);
  try {
    await fillForm(params);
    const trace = location.pathname.match(/\/trace\/([0-9a-fA-F]+)/);
    if (trace) await showTrace(out, trace[1]);
    else await showSearch(out, params);
  } catch (err) {
    out.replaceChildren(el("p", { class: "error" }, String(err.message || err)));
  }
  document.body.dataset.ready = "true";
}

main();
