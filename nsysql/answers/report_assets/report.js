/* nsysql html: renders the embedded summarize JSON (#report-data) with Plotly (#plotly-gz, gzip + base64).
   Everything the page shows comes from that JSON; nothing is fetched. When every chart is drawn,
   document.body.dataset.ready = "1" (the browser tests wait for it). */
"use strict";

const DATA = JSON.parse(document.getElementById("report-data").textContent);
const S = DATA.summary;
const OV = S.overview || {};

// TensorBoard profiler's step-time categories and colours (its Overview page), communication added
const CATEGORIES = [
  ["kernel_ns", "Kernel", "#3366cc"],
  ["comm_transfer_ns", "Comm transfer", "#8172b3"],
  ["comm_wait_ns", "Comm wait", "#c5b0d5"],
  ["memcpy_ns", "Memcpy", "#dc3912"],
  ["memset_ns", "Memset", "#ff9900"],
  ["runtime_ns", "CUDA Runtime", "#109618"],
  ["dataloader_ns", "DataLoader", "#990099"],
  ["cpu_exec_ns", "CPU Exec", "#0099c6"],
  ["other_ns", "Other", "#dd4477"],
];
// nsysql plot's direction colours (nsysql/plot.py)
const DIRECTIONS = {
  fprop: ["forward", "#4C72B0"], bprop: ["backward", "#DD8452"], recompute: ["recompute (checkpointing)", "#CCB974"],
  optim: ["optimizer", "#55A868"],
  comm: ["communication", "#8172B3"], copy: ["copy / set", "#C44E52"], other: ["other / unknown", "#9A9A9A"],
};
// the critical path's kinds (nsysql/answers/critical_path.py), in nsysql plot's colours (nsysql/present/plot_path.py)
const CP_KINDS = {
  cpu: ["CPU work", "#E69F00"], launch: ["CUDA call, launch latency", "#F0E442"], gpu_compute: ["GPU compute", "#0072B2"],
  copy: ["copy / set", "#D55E00"], sync_wait: ["sync wait", "#999999"], comm_transfer: ["comm transfer", "#8172B3"],
  comm_wait: ["comm wait (late rank)", "#CC79A7"],
};
const CP = DATA.critical_path;  // {kinds, steps: the composition per analysed step} or null
const HOST_KINDS = { range: ["NVTX range", "#BFD3E6"], marker: ["op marker", "#E5E5E5"], api: ["CUDA API", "#F2C45A"] };
const PLOT_CONFIG = { displaylogo: false, responsive: true, modeBarButtonsToRemove: ["select2d", "lasso2d"] };
const FONT = { family: "system-ui, -apple-system, Segoe UI, Roboto, sans-serif", size: 12 };

// -- formatting ----------------------------------------------------------------------------------------------
function fixed(v, d) {
  return v.toLocaleString("en-US", { minimumFractionDigits: d, maximumFractionDigits: d });
}
// nsysql/core/units.py's duration(): three significant digits, the unit chosen by size, "-" for none
const DURATION_STEPS = [[1e11, 1e9, 0, "s"], [1e10, 1e9, 1, "s"], [1e9, 1e9, 2, "s"], [1e8, 1e6, 0, "ms"],
  [1e7, 1e6, 1, "ms"], [1e6, 1e6, 2, "ms"], [1e5, 1e3, 0, "µs"], [1e4, 1e3, 1, "µs"], [1e3, 1e3, 2, "µs"]];
function fmtNs(ns) {
  if (ns === null || ns === undefined) return "-";
  const size = Math.abs(ns);
  for (const [floor, scale, decimals, unit] of DURATION_STEPS) {
    if (size >= floor) return (ns / scale).toFixed(decimals) + " " + unit;
  }
  return ns.toFixed(0) + " ns";
}
function fmtPct(v) { return v === null || v === undefined ? "n/a" : fixed(v, 1) + " %"; }
function fmtCount(v) { return v === null || v === undefined ? "n/a" : fixed(v, 0); }
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null) continue;
    if (k === "text") node.textContent = v; else node.setAttribute(k, v);
  }
  for (const c of children) node.append(c);
  return node;
}
function stepLabel(s, several) { return several ? `${s.step} (pid ${s.pid})` : `step ${s.step}`; }
function ms(ns) { return ns / 1e6; }

// -- header, cards, tables (no library needed) ---------------------------------------------------------------
function renderHeader() {
  document.getElementById("export-name").textContent = S.export;
  const c = S.capture || {};
  const facts = [
    ["GPUs", c.gpus], ["capture", fmtNs(c.duration_ns)], ["Nsight Systems", c.nsys_version],
    ["processes", fmtCount(c.processes)], ["threads", fmtCount(c.threads)], ["kernels", fmtCount(c.kernels)],
    ["CUDA API calls", fmtCount(c.api_calls)], ["NVTX ranges", fmtCount(c.nvtx_ranges)],
    ["copies", fmtCount(c.memcpys)], ["GPU busy (capture)", fmtPct(c.capture_gpu_busy_pct)],
  ];
  const dl = document.getElementById("capture");
  for (const [k, v] of facts) {
    if (v === undefined || v === null) continue;
    dl.append(el("div", {}, el("dt", { text: k }), el("dd", { text: String(v) })));
  }
  const st = OV.step_time || {};
  let scope;
  if (OV.scope === "steps") {
    scope = `Analysed: ${st.analysed_steps} step${st.analysed_steps === 1 ? "" : "s"} (${st.first_step} to ${st.last_step}` +
      (st.processes > 1 ? `, in each of ${st.processes} processes)` : ")");
    const ex = st.excluded || [];
    if (ex.length) {
      const why = { warmup_range: "inside a warm-up range", slow_leading_step: "slow leading steps",
        slow_leading_request: "a slow leading request" };
      scope += `; left out as warm-up: ${ex.length} step${ex.length === 1 ? "" : "s"} (` +
        [...new Set(ex.map(e => why[e.reason] || e.reason))].join(", ") + ")";
    } else scope += "; no warm-up step left out";
  } else if (OV.scope === "gpu_span") {
    scope = "No steps found: the figures cover the GPU's active span (first to last GPU op).";
  } else scope = "No steps and no GPU work: nothing to break down";
  document.getElementById("scope").textContent = scope + ".";
  document.getElementById("command").append(
    "Reproduce these numbers: ", el("code", { text: DATA.command + " --full --top 10 -f json" }));
}

function card(label, value, key, raw, sub) {
  return el("div", { class: "card" }, el("div", { class: "label", text: label }),
    el("div", { class: "value", "data-key": key, "data-value": raw === undefined ? null : String(raw), text: value }),
    sub ? el("div", { class: "sub", text: sub }) : "");
}

function renderCards() {
  const st = OV.step_time || {};
  const box = document.getElementById("cards");
  if (!st.analysed_steps) { box.append(el("p", { class: "empty", text: "no analysed steps" })); return; }
  box.append(card("Mean step time", fmtNs(st.mean_ns), "overview.step_time.mean_ns", st.mean_ns,
                  `${st.analysed_steps} analysed steps`));
  box.append(card("Median step time", fmtNs(st.median_ns), "overview.step_time.median_ns", st.median_ns));
  box.append(card("Slowest step", fmtNs(st.max_ns), "overview.step_time.max_ns", st.max_ns,
                  `step ${st.slowest_step}` + (st.processes > 1 ? ` (pid ${st.slowest_pid})` : "")));
  const mean = OV.mean_breakdown || {};
  const total = CATEGORIES.reduce((a, [k]) => a + (mean[k] || 0), 0);
  const top = CATEGORIES.filter(([k]) => mean[k]).sort((a, b) => mean[b[0]] - mean[a[0]])[0];
  if (top && total) {
    box.append(card(`Largest: ${top[1]}`, fmtNs(mean[top[0]]), `overview.mean_breakdown.${top[0]}`, mean[top[0]],
                    `${fixed(100 * mean[top[0]] / total, 1)} % of the step`));
  }
  (OV.gpus || []).forEach((g, i) => {
    box.append(card(`GPU ${g.device_id} utilization`, fmtPct(g.utilization_pct), `overview.gpus.${i}.utilization_pct`,
                    g.utilization_pct, g.gpu_name));
  });
  const outl = st.outlier_steps || [];
  document.getElementById("steps-note").textContent =
    (outl.length ? `Outlier steps (marked ▲): ${outl.map((s, i) => st.processes > 1 ? `${s} (pid ${st.outlier_pids[i]})` : s).join(", ")}. ` : "") +
    "Each bar is one analysed step, split into TensorBoard's categories; the last bar is their mean.";
}

// column name -> [header, unit scale or null, kind]
function columnSpec(key, values) {
  if (key.endsWith("_ns") || key.endsWith("(ns)")) {
    const max = Math.max(0, ...values.filter(v => typeof v === "number").map(Math.abs));
    const [unit, scale] = max >= 1e9 ? ["s", 1e9] : max >= 1e6 ? ["ms", 1e6] : max >= 1e3 ? ["µs", 1e3] : ["ns", 1];
    const base = key.replace(/_ns$/, "").replace(/ \(ns\)$/, "").replace(/_/g, " ");
    return [`${base} (${unit})`, scale, "num"];
  }
  if (/(^|_)pct(_|$)/.test(key) || key.endsWith("(%)")) {
    const base = key.replace(/_?pct/, "").replace(/ \(%\)$/, "").replace(/_/g, " ").trim();
    return [`${base || "share"} (%)`, 1, "pct"];
  }
  if (key.endsWith("_bytes")) return [`${key.replace(/_bytes$/, "").replace(/_/g, " ")} (MB)`, 1e6, "num"];
  if (values.some(v => typeof v === "number")) return [key.replace(/_/g, " "), null, "count"];
  return [key.replace(/_/g, " "), null, "text"];
}

function table(rows, opts) {
  opts = opts || {};
  if (!rows || !rows.length) return el("p", { class: "empty", text: "none" });
  const keys = Object.keys(rows[0]).filter(k => !(opts.hide || []).includes(k));
  const specs = keys.map(k => columnSpec(k, rows.map(r => r[k])));
  const thead = el("thead", {}, el("tr", {}, ...keys.map((k, i) =>
    el("th", { class: specs[i][2] === "text" ? "text" : null, "data-col": k, title: k, text: specs[i][0] }))));
  const tbody = el("tbody");
  for (const r of rows) {
    const tr = el("tr", { class: r.straggler === true ? "straggler" : null });
    keys.forEach((k, i) => {
      const v = r[k];
      const [, scale, kind] = specs[i];
      let text;
      if (v === null || v === undefined) text = "";
      else if (kind === "text" || typeof v !== "number") text = String(v);
      else if (kind === "pct") text = fixed(v, 1);
      else if (scale) text = fixed(v / scale, v / scale >= 100 ? 1 : 3);
      else text = Number.isInteger(v) ? fixed(v, 0) : fixed(v, 1);
      const long = kind === "text" && text.length > 60;
      const full = opts.full && r[opts.full[k]] ? r[opts.full[k]] : (long ? text : null);
      tr.append(el("td", {
        class: kind === "text" ? (long || opts.full?.[k] ? "text name" : "text") : null,
        "data-v": typeof v === "number" ? String(v) : text, title: full,
        text: long ? text.slice(0, 57) + "…" : text,
      }));
    });
    tbody.append(tr);
  }
  const t = el("table", { class: "sortable", "data-table": opts.id || null }, thead, tbody);
  thead.addEventListener("click", ev => {
    const th = ev.target.closest("th");
    if (th) sortBy(t, [...th.parentNode.children].indexOf(th), th);
  });
  return el("div", { class: "table-wrap" }, t);
}

function sortBy(t, col, th) {
  const desc = th.getAttribute("aria-sort") !== "descending";
  t.querySelectorAll("th").forEach(h => h.removeAttribute("aria-sort"));
  th.setAttribute("aria-sort", desc ? "descending" : "ascending");
  const rows = [...t.tBodies[0].rows];
  const val = r => r.cells[col].dataset.v;
  const numeric = rows.every(r => val(r) === "" || !isNaN(Number(val(r))));
  rows.sort((a, b) => {
    const x = val(a), y = val(b);
    const c = numeric ? (Number(x) - Number(y)) : x.localeCompare(y);
    return desc ? -c : c;
  });
  rows.forEach(r => t.tBodies[0].append(r));
}

function renderTables() {
  const box = document.getElementById("top-tables");
  box.append(el("h3", { text: "Top operators and ranges (GPU and host time)" }),
             table(OV.top_ops, { id: "top_ops" }));
  box.append(el("h3", { text: "Top kernels" }),
             table(OV.top_kernels, { id: "top_kernels", hide: ["full_name"], full: { short_name: "full_name" } }));
  box.append(el("h3", { text: "Top CUDA API calls" }), table(OV.top_api, { id: "top_api" }));
  const gpus = OV.gpus || [];
  document.getElementById("gpu-table").append(table(gpus, { id: "gpus" }));
  const more = document.getElementById("detail-tables");
  const shown = new Set(["layers", "coverage", "communication"]);
  let any = false;
  for (const [key, sec] of Object.entries(S)) {
    if (!sec || !Array.isArray(sec.rows) || shown.has(key)) continue;
    any = true;
    more.append(el("h3", { text: key.replace(/_/g, " ") }),
                sec.note ? el("p", { class: "note", text: sec.note }) : "",
                table(sec.rows, { id: key, full: key === "kernels" ? {} : null }));
  }
  if (!any) document.getElementById("details").classList.add("hidden");
}

// -- charts -------------------------------------------------------------------------------------------------
function layout(extra) {
  return Object.assign({ font: FONT, margin: { l: 60, r: 20, t: 10, b: 40 }, paper_bgcolor: "#fff",
                         plot_bgcolor: "#fff", legend: { orientation: "h", y: -0.18 } }, extra);
}

// A legend below the plot, at the bottom of the figure, with room for as many lines as it wraps to at this width
// (a narrow window wraps it; a fixed margin would let it run over the next section).
function legendRoom(node, names, xTitle) {
  const width = Math.max(node.clientWidth || 800, 200);
  const chars = names.reduce((a, n) => a + n.length * 7 + 50, 0);
  return 22 * Math.max(1, Math.ceil(chars / (width - 40))) + (xTitle ? 50 : 34);
}
function legendBelow(node, traces, lay, xTitle) {
  const names = traces.map(t => t.name || "");
  const base = lay.height || 300;
  const room = legendRoom(node, names, xTitle);
  lay.legend = { orientation: "h", x: 0, xanchor: "left", yref: "container", y: 0, yanchor: "bottom",
                 traceorder: "normal" };
  lay.margin = Object.assign({}, lay.margin, { b: room });
  lay.height = base + room - 40;
  node.dataset.legend = "1";
  node._legend = { names, base, xTitle };
  return lay;
}
let resizeTimer = null;
window.addEventListener("resize", () => {
  clearTimeout(resizeTimer);
  resizeTimer = setTimeout(() => document.querySelectorAll("[data-legend]").forEach(node => {
    const { names, base, xTitle } = node._legend;
    const room = legendRoom(node, names, xTitle);
    if (room !== node.layout.margin.b) Plotly.relayout(node, { "margin.b": room, height: base + room - 40 });
  }), 150);
});

// The step-time chart as a plain SVG picture, drawn before Plotly is inflated and evaluated (about a second on a
// slow machine): the page's first chart at once; drawSteps replaces it with the interactive one
function previewSteps() {
  const steps = OV.steps || [];
  const node = document.getElementById("chart-steps");
  if (!steps.length) return false;
  const ns = "http://www.w3.org/2000/svg";
  const W = Math.max(node.clientWidth || 800, 200), H = 340, L = 60, R = 20, T = 10, B = 64;
  const cats = CATEGORIES.filter(([k]) => steps.some(s => s.breakdown[k]) || (OV.mean_breakdown || {})[k]);
  const cols = steps.map(s => s.breakdown).concat([OV.mean_breakdown || {}]);
  const top = Math.max(1, ...cols.map(b => cats.reduce((a, [k]) => a + (b[k] || 0), 0))) / 1e6;
  const step = Math.pow(10, Math.floor(Math.log10(top))) * (top / Math.pow(10, Math.floor(Math.log10(top))) > 5 ? 2 : 1);
  const svg = document.createElementNS(ns, "svg");
  const add = (tag, attrs, text) => {
    const n = document.createElementNS(ns, tag);
    for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, v);
    if (text !== undefined) n.textContent = text;
    svg.append(n);
    return n;
  };
  svg.setAttribute("class", "preview");
  svg.setAttribute("width", W);
  svg.setAttribute("height", H);
  svg.setAttribute("font-family", FONT.family);
  svg.setAttribute("font-size", "12");
  const y = v => T + (H - T - B) * (1 - v / (Math.ceil(top / step) * step));
  for (let v = 0; v <= Math.ceil(top / step) * step + 1e-9; v += step) {
    add("line", { x1: L, x2: W - R, y1: y(v), y2: y(v), stroke: "#eee" });
    add("text", { x: L - 6, y: y(v) + 4, "text-anchor": "end", fill: "#444" }, fixed(v, step < 1 ? 1 : 0));
  }
  const slot = (W - L - R) / cols.length;
  const every = Math.ceil(cols.length / Math.max(1, Math.floor((W - L - R) / 40)));
  cols.forEach((b, i) => {
    let acc = 0;
    for (const [k, , color] of cats) {
      const v = (b[k] || 0) / 1e6;
      if (!v) continue;
      add("rect", { x: L + i * slot + slot * 0.1, width: slot * 0.8, y: y(acc + v), height: y(acc) - y(acc + v), fill: color });
      acc += v;
    }
    if (i % every === 0 || i === cols.length - 1) {
      add("text", { x: L + (i + 0.5) * slot, y: H - B + 16, "text-anchor": "middle", fill: "#444" },
          i === cols.length - 1 ? "mean" : String(steps[i].step));
    }
  });
  add("text", { x: 14, y: (T + H - B) / 2, "text-anchor": "middle", fill: "#444",
                transform: `rotate(-90 14 ${(T + H - B) / 2})` }, "ms per step");
  let x = L;
  for (const [, name, color] of cats) {
    add("rect", { x, y: H - 22, width: 12, height: 12, fill: color });
    add("text", { x: x + 16, y: H - 12, fill: "#444" }, name);
    x += 30 + name.length * 7;
  }
  node.append(svg);
  return true;
}

function drawSteps() {
  const steps = OV.steps || [];
  const node = document.getElementById("chart-steps");
  if (!steps.length) { node.classList.add("hidden"); return null; }  // the cards say so
  node.querySelectorAll("svg.preview").forEach(n => n.remove());
  const st = OV.step_time || {};
  const several = (st.processes || 1) > 1;
  const many = steps.length > 16;  // numbers only: "step 24" labels would turn and run into the legend
  const label = s => many ? (several ? `${s.step}·${s.pid}` : String(s.step)) : stepLabel(s, several);
  const labels = steps.map(label).concat(["mean"]);
  const traces = [];
  for (const [key, name, color] of CATEGORIES) {
    const ys = steps.map(s => s.breakdown[key] || 0).concat([OV.mean_breakdown[key] || 0]);
    if (!ys.some(v => v)) continue;
    traces.push({ type: "bar", name, x: labels, y: ys.map(ms), marker: { color },
                  customdata: ys.map(fmtNs), hovertemplate: `%{x}<br>${name}: %{customdata}<extra></extra>` });
  }
  const outliers = new Set((st.outlier_steps || []).map((s, i) => `${s}/${(st.outlier_pids || [])[i]}`));
  const annotations = steps.filter(s => outliers.has(`${s.step}/${s.pid}`)).map(s => ({
    x: label(s), y: ms(s.wall_ns), text: many ? "▲" : "▲ outlier", showarrow: false, yanchor: "bottom",
    font: { color: "#cf222e", size: 11 } }));
  return Plotly.newPlot(node, traces, legendBelow(node, traces, layout({ barmode: "stack", height: 340, annotations,
    yaxis: { title: { text: "ms per step" }, rangemode: "tozero" },
    xaxis: { type: "category", title: many ? { text: several ? "step · pid" : "step" } : undefined } }), many),
    PLOT_CONFIG);
}

// NVIDIA's nvtx_pace of the step range (nsysql/answers/html_report.py recipe_charts): each step's duration and the
// delta before it, a line per rank, outliers of its rank ringed; the first delta (from the session's start) left out
function drawPace() {
  const P = DATA.recipes && DATA.recipes.pace;
  const sec = document.getElementById("pace");
  if (!P || !P.rows.length) { sec.classList.add("hidden"); return null; }
  const node = document.getElementById("chart-pace");
  const colors = ["#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3", "#937860", "#DA8BC3", "#8C8C8C"];
  const several = P.ranks.length > 1;
  const traces = [];
  P.rows.forEach((r, k) => {
    const name = several ? `rank ${k}: ${P.ranks[k]}` : P.ranks[k];
    const color = colors[k % colors.length];
    traces.push({ type: "scatter", mode: "lines+markers", name, x: r.iteration, y: r.duration_ns.map(ms),
                  line: { color, width: 1.5 }, marker: { size: 4 }, legendgroup: name, yaxis: "y",
                  customdata: r.duration_ns.map(fmtNs), hovertemplate: `iteration %{x}<br>duration %{customdata}<extra>${name}</extra>` });
    const later = r.iteration.map((_, i) => i).filter(i => r.iteration[i] > 0);
    traces.push({ type: "scatter", mode: "lines+markers", name, showlegend: false, legendgroup: name, yaxis: "y2",
                  x: later.map(i => r.iteration[i]), y: later.map(i => ms(r.delta_ns[i])), line: { color, width: 1.5 },
                  marker: { size: 4 }, customdata: later.map(i => fmtNs(r.delta_ns[i])),
                  hovertemplate: `iteration %{x}<br>delta %{customdata}<extra>${name}</extra>` });
    for (const [axis, key, marks] of [["y", "duration_ns", ["long", "short"]], ["y2", "delta_ns", ["late", "early"]]]) {
      const hit = r.iteration.map((_, i) => i).filter(i => (axis === "y" || r.iteration[i] > 0) &&
                                                         marks.some(m => (r.outlier[i] || "").split(", ").includes(m)));
      if (!hit.length) continue;
      traces.push({ type: "scatter", mode: "markers", name: "outlier", legendgroup: "outlier",
                    showlegend: !traces.some(t => t.name === "outlier"), yaxis: axis,
                    x: hit.map(i => r.iteration[i]), y: hit.map(i => ms(r[key][i])),
                    marker: { size: 11, color: "rgba(0,0,0,0)", line: { color: "#cf222e", width: 2 } },
                    customdata: hit.map(i => r.outlier[i]), hovertemplate: `iteration %{x}: %{customdata}<extra></extra>` });
    }
  });
  const shapes = P.median_ns === null ? [] : [{ type: "line", xref: "paper", x0: 0, x1: 1, yref: "y", y0: ms(P.median_ns),
                                                 y1: ms(P.median_ns), line: { color: "#555", dash: "dash", width: 1 } }];
  document.getElementById("pace-note").textContent = `Each ${P.name} range, as NVIDIA's recipe nvtx_pace --name ${P.name} ` +
    "times it (nsysql recipe nvtx_pace): duration above, delta (from the previous one's end) below; iterations count " +
    "from 0 as NVIDIA's do (iteration N is step N + 1); ringed: outside " +
    `1.5 IQR of its rank's quartiles; dashed: the median${several ? " (approximated over ranks, as NVIDIA does)" : ""}.`;
  return Plotly.newPlot(node, traces, legendBelow(node, traces, layout({ height: 420, shapes,
    yaxis: { title: { text: "duration (ms)" }, domain: [0.55, 1], rangemode: "tozero" },
    yaxis2: { title: { text: "delta (ms)" }, domain: [0, 0.42], rangemode: "tozero" },
    xaxis: { title: { text: "iteration" }, anchor: "y2", zeroline: false,
             dtick: Math.max(0, ...P.rows.map(r => r.iteration.length)) <= 20 ? 1 : undefined } }), true), PLOT_CONFIG);
}

// NVIDIA's cuda_gpu_time_util_map: the share of each time bin in which kernels ran, a row per rank/device/PID
function drawUtilMap() {
  const U = DATA.recipes && DATA.recipes.util;
  const sec = document.getElementById("utilmap");
  if (!U || !U.z.length) { sec.classList.add("hidden"); return null; }
  const node = document.getElementById("chart-utilmap");
  const bins = U.z[0].length;
  const x = Array.from({ length: bins }, (_, b) => (b + 0.5) * U.bin_ns / 1e9);
  const traces = [{ type: "heatmap", x, y: U.labels, z: U.z, zmin: 0, zmax: 100, colorscale: "Viridis",
                    colorbar: { title: { text: "%" } }, hoverongaps: false,
                    hovertemplate: "%{y}<br>%{x:.2f} s: %{z:.1f} %<extra></extra>" }];
  document.getElementById("utilmap-note").textContent = `${bins} bins of ${fmtNs(U.bin_ns)} from the aligned session ` +
    "start, as NVIDIA's recipe cuda_gpu_time_util_map computes them (nsysql recipe cuda_gpu_time_util_map): the " +
    "share of each bin some kernel ran, per Rank/Device/PID; blank outside that export's session.";
  return Plotly.newPlot(node, traces, layout({ height: 120 + 34 * U.labels.length,
    xaxis: { title: { text: "time (s)" } },
    yaxis: { type: "category", autorange: "reversed", automargin: true,
             title: { text: "rank/device/PID", font: { size: 11 } } } }), PLOT_CONFIG);
}

function drawGpus() {
  const gpus = OV.gpus || [];
  const node = document.getElementById("chart-gpus");
  if (!gpus.length) { node.classList.add("hidden"); return null; }  // the table says none
  const metrics = [["utilization_pct", "utilization"], ["sm_efficiency_pct", "SM efficiency (est.)"],
                   ["achieved_occupancy_pct", "achieved occupancy"], ["tensor_core_pct", "tensor-core share"],
                   ["comm_wait_pct", "communication wait"]];
  const traces = metrics.filter(([k]) => gpus.some(g => g[k] !== null && g[k] !== undefined)).map(([k, name]) => ({
    type: "bar", name, x: gpus.map(g => `GPU ${g.device_id}`), y: gpus.map(g => g[k]),
    hovertemplate: `%{x}<br>${name}: %{y:.1f} %<extra></extra>` }));
  return Plotly.newPlot(node, traces, legendBelow(node, traces, layout({ barmode: "group", height: 260,
    yaxis: { title: { text: "%" }, range: [0, 100] }, xaxis: { type: "category" } })), PLOT_CONFIG);
}

function drawLayers() {
  const rows = (S.layers && S.layers.rows) || [];
  const node = document.getElementById("chart-layers");
  const cov = document.getElementById("coverage");
  if (S.layers && S.layers.note) cov.append(el("p", { text: S.layers.note }));
  if (S.coverage && S.coverage.note) cov.append(el("p", { text: S.coverage.note }));
  if (!rows.length) {
    if (!S.layers) document.getElementById("layers").classList.add("hidden");
    else node.append(el("p", { class: "empty", text: "no kernels attributed to layers" }));
    return null;
  }
  const shown = rows.slice().reverse();  // largest at the top
  const traces = ["fprop", "bprop", "recompute", "optim", "comm"].filter(d => rows.some(r => r[d + "_ns"])).map(d => ({
    type: "bar", orientation: "h", name: DIRECTIONS[d][0], marker: { color: DIRECTIONS[d][1] },
    y: shown.map(r => r.layer), x: shown.map(r => ms(r[d + "_ns"] || 0)),
    customdata: shown.map(r => fmtNs(r[d + "_ns"] || 0)),
    hovertemplate: `%{y}<br>${DIRECTIONS[d][0]}: %{customdata}<extra></extra>` }));
  return Plotly.newPlot(node, traces, legendBelow(node, traces, layout({ barmode: "stack", height: 110 + 26 * rows.length,
    margin: { l: 10, r: 20, t: 30, b: 40 }, yaxis: { automargin: true, type: "category" },
    xaxis: { title: { text: "GPU time (ms), analysed and warm-up steps" } } }), true), PLOT_CONFIG);
}

function rankRows() { return (S.communication && S.communication.rows) || []; }

function drawRanks() {
  const rows = rankRows();
  const ranks = new Set(rows.map(r => `${r.rank}/${r.pid}`));
  const node = document.getElementById("chart-ranks");
  if (ranks.size < 2) { document.getElementById("ranks").classList.add("hidden"); return null; }
  document.getElementById("ranks-note").textContent = S.communication.note || "";
  const x = [rows.map(r => `step ${r.step}`), rows.map(r => `rank ${r.rank}`)];
  const parts = [["compute_ns", "compute", "#4C72B0"], ["transfer_ns", "transfer", "#8172B3"],
                 ["wait_ns", "wait", "#C5B0D5"]];
  const traces = parts.map(([k, name, color]) => ({
    type: "bar", name, x, y: rows.map(r => ms(r[k] || 0)), marker: { color },
    customdata: rows.map(r => fmtNs(r[k] || 0)), hovertemplate: `%{x}<br>${name}: %{customdata}<extra></extra>` }));
  const annotations = rows.filter(r => r.straggler).map(r => ({
    x: [`step ${r.step}`, `rank ${r.rank}`], y: ms((r.compute_ns || 0) + (r.transfer_ns || 0) + (r.wait_ns || 0)),
    text: "straggler", showarrow: true, arrowhead: 2, ay: -24, font: { color: "#cf222e", size: 11 } }));
  return Plotly.newPlot(node, traces, legendBelow(node, traces, layout({ barmode: "stack", height: 320, annotations,
    yaxis: { title: { text: "ms per step" } } }), true), PLOT_CONFIG);
}

// -- what bounds the step: the critical path ------------------------------------------------------------------
function renderBound() {
  const b = S.critical_path;
  if (!b && !CP) { document.getElementById("bound").classList.add("hidden"); return; }
  const line = document.getElementById("bound-line");
  line.textContent = b ? b.line : "";
  const box = document.getElementById("bound-cards");
  const mean = (b && b.mean_per_step) || {};
  for (const k of Object.keys(CP_KINDS)) {
    const v = mean[k + "_ns"];
    if (!v) continue;
    box.append(card(CP_KINDS[k][0], fmtNs(v), `critical_path.mean_per_step.${k}_ns`, v,
                    `${fixed(100 * v / mean.path_ns, 1)} % of the path, mean per step`));
  }
  const cmd = DATA.command.replace("nsysql summarize", "nsysql critical-path");
  const walked = CP ? new Set(CP.steps.map(s => s.step)).size : 0;
  const sample = CP && CP.analysed > walked
    ? `The bars are the last ${walked} of ${CP.analysed} analysed steps: past ${CP.budget.toLocaleString("en-US")} ` +
      "CUDA calls and GPU ops the " +
      "page walks a sample, as summarize's line does; the command below walks every step. "
    : "";
  document.getElementById("bound-note").append(sample +
    "Each bar is one analysed step's critical path: the chain of CPU work, CUDA calls, GPU ops, waits and " +
    "communication that ended last, walked back from the step's end; its length is the step's wall time. " +
    (CP && CP.steps.some(s => s.export !== undefined)
      ? "Each export's (rank's) steps are walked on the ranks' graphs merged: a rank that waited for a late one " +
        "goes on through the late rank's work. The Timeline does not draw a job's paths. "
      : "The Timeline below draws the path of the step it shows on top, and marks each item on its thread or stream. "),
    "Reproduce: ", el("code", { text: cmd }));
}

function cpStepLabel(s) {
  const where = [s.export, s.pid === undefined ? null : `pid ${s.pid}`].filter(x => x != null);
  return where.length ? `${s.step} (${where.join(", ")})` : `step ${s.step}`;
}

function drawBound() {
  const node = document.getElementById("chart-bound");
  if (!CP) { node.classList.add("hidden"); return null; }
  const x = CP.steps.map(cpStepLabel);
  const traces = CP.kinds.filter(k => CP.steps.some(s => s[k + "_ns"])).map(k => ({
    type: "bar", name: CP_KINDS[k][0], meta: k, x, y: CP.steps.map(s => ms(s[k + "_ns"])),
    marker: { color: CP_KINDS[k][1] }, customdata: CP.steps.map(s => fmtNs(s[k + "_ns"])),
    hovertemplate: `%{x}<br>${CP_KINDS[k][0]}: %{customdata}<extra></extra>` }));
  return Plotly.newPlot(node, traces, legendBelow(node, traces, layout({ barmode: "stack", height: 320,
    yaxis: { title: { text: "ms per step (the path's time by kind)" }, rangemode: "tozero" },
    xaxis: { type: "category" } })), PLOT_CONFIG);
}

// -- findings -----------------------------------------------------------------------------------------------
const FINDING_COMMAND = {
  gpu_idle_in_step: "gaps", outlier_step: "steps", straggler: "comm", exposed_comm: "comm",
  dataloader_wait: "steps", launch_bound: "overhead", sync_in_step: "gaps", pageable_copy: "memcpy",
  fp32_gemm: "kernels", short_kernels: "kernels",
};

function evidence(f, node) {
  const steps = OV.steps || [];
  const st = OV.step_time || {};
  const several = (st.processes || 1) > 1;
  const small = extra => layout(Object.assign({ height: 200, margin: { l: 50, r: 10, t: 24, b: 40 },
                                                showlegend: false,
                                                xaxis: { type: "category", automargin: true,
                                                         title: { text: several ? "step · pid" : "step", font: { size: 11 } } } },
                                              extra));
  const title = text => ({ text, font: { size: 12 }, x: 0, xanchor: "left" });
  if (f.rule === "straggler" || f.rule === "exposed_comm") {
    const rows = rankRows();
    if (rows.length) {
      const byRank = {};
      rows.forEach(r => { (byRank[`rank ${r.rank}`] = byRank[`rank ${r.rank}`] || []).push(r); });
      const traces = Object.entries(byRank).map(([name, rs]) => ({
        type: "bar", name, x: rs.map(r => `step ${r.step}`),
        y: rs.map(r => ms(f.rule === "straggler" ? r.wait_ns : r.exposed_comm_ns || 0)) }));
      return Plotly.newPlot(node, traces, small({ barmode: "group", showlegend: true, legend: { orientation: "h", y: -0.15 },
        xaxis: { type: "category" },
        title: title(f.rule === "straggler" ? "wait per rank and step (ms)" : "exposed communication (ms)") }),
        { staticPlot: false, displayModeBar: false, responsive: true });
    }
  }
  if (!steps.length) return null;
  const x = steps.map(s => several ? `${s.step}·${s.pid}` : String(s.step));  // short: the chart is small
  const gpuBusy = s => (s.breakdown.kernel_ns || 0) + (s.breakdown.memcpy_ns || 0) + (s.breakdown.memset_ns || 0) +
    (s.breakdown.comm_transfer_ns || 0) + (s.breakdown.comm_wait_ns || 0);
  let traces, t;
  if (f.rule === "outlier_step") {
    const out = new Set((st.outlier_steps || []).map((s, i) => `${s}/${(st.outlier_pids || [])[i]}`));
    traces = [{ type: "bar", x, y: steps.map(s => ms(s.wall_ns)),
                marker: { color: steps.map(s => out.has(`${s.step}/${s.pid}`) ? "#cf222e" : "#9A9A9A") } }];
    t = "wall time per step (ms), outliers red";
  } else if (f.rule === "dataloader_wait") {
    traces = [{ type: "bar", name: "DataLoader", x, y: steps.map(s => ms(s.breakdown.dataloader_ns || 0)), marker: { color: "#990099" } },
              { type: "bar", name: "rest", x, y: steps.map(s => ms(s.wall_ns - (s.breakdown.dataloader_ns || 0))), marker: { color: "#D0D0D0" } }];
    t = "data loading per step (ms)";
  } else if (f.rule === "launch_bound" || f.rule === "sync_in_step") {
    traces = [{ type: "bar", name: "CUDA Runtime", x, y: steps.map(s => ms(s.breakdown.runtime_ns || 0)), marker: { color: "#109618" } },
              { type: "bar", name: "GPU busy", x, y: steps.map(s => ms(gpuBusy(s))), marker: { color: "#3366cc" } }];
    t = "CUDA API time vs GPU busy per step (ms)";
    return Plotly.newPlot(node, traces, small({ barmode: "group", title: title(t) }),
                          { displayModeBar: false, responsive: true });
  } else {  // idle GPU and the rest: busy against idle per step
    traces = [{ type: "bar", name: "GPU busy", x, y: steps.map(s => ms(gpuBusy(s))), marker: { color: "#3366cc" } },
              { type: "bar", name: "GPU idle", x, y: steps.map(s => ms(Math.max(0, s.wall_ns - gpuBusy(s)))), marker: { color: "#E0E0E0" } }];
    t = "GPU busy and idle per step (ms)";
  }
  return Plotly.newPlot(node, traces, small({ barmode: "stack", title: title(t) }),
                        { displayModeBar: false, responsive: true });
}

function renderFindings() {
  const list = document.getElementById("finding-list");
  const findings = S.findings || [];
  if (!findings.length) { list.append(el("p", { class: "empty", text: "nothing to fix found" })); return []; }
  const pending = [];
  findings.forEach((f, i) => {
    const chart = el("div", { class: "chart", "data-chart": `finding-${f.rule}`, id: `finding-chart-${i}` });
    const sub = FINDING_COMMAND[f.rule];
    const cmd = DATA.command.replace("nsysql summarize", "nsysql findings") + (sub ? `; ${DATA.command.replace("nsysql summarize", "nsysql " + sub)}` : "");
    const text = el("div", {},
      el("h3", { text: f.title }),
      el("p", { class: "note", text: f.where }),
      el("p", { class: "recoverable", "data-key": `findings.${i}.recoverable_ns`, "data-value": String(f.recoverable_ns),
                text: `Recoverable: up to ${fmtNs(f.recoverable_ns)} (${fmtPct(f.recoverable_pct)} of the analysed time)` }),
      el("p", { text: f.evidence }),
      el("p", {}, el("strong", { text: "Action: " }), f.action),
      el("p", { class: "note" }, "Reproduce: ", el("code", { text: cmd })));
    list.append(el("div", { class: "finding", id: `finding-${i}` }, text, chart));
    pending.push(() => evidence(f, chart));
  });
  return pending;
}

// -- the timeline of one step ---------------------------------------------------------------------------------
// TL.steps: a row per step (number, name, wall time, whether analysed, whether this page carries its timeline);
// each carried step's rows and bars are a gzip + base64 block (#timeline-N), inflated when the step is drawn
const TL = DATA.timeline || { steps: [] };
const LOADED = {};

async function inflate(id) {
  const b64 = document.getElementById(id).textContent.trim();
  const bin = atob(b64);
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  return new Response(stream).text();
}

async function stepTimeline(number) {
  if (!LOADED[number]) LOADED[number] = inflate(`timeline-${number}`).then(JSON.parse);
  return LOADED[number];
}

async function drawTimeline(number) {
  const node = document.getElementById("chart-timeline");
  const row = TL.steps.find(s => s.step === number && s.carried);
  if (!row) {
    document.querySelector("#timeline .controls").classList.add("hidden");
    node.append(el("p", { class: "empty", text: "nothing to draw: no NVTX ranges, CUDA API calls or GPU ops" }));
    return null;
  }
  node.dataset.loading = String(number);
  const step = await stepTimeline(number);
  if (node.dataset.loading !== String(number)) return null;  // another step was picked meanwhile
  const b = step.bars, str = step.strings;
  const labels = step.rows.map(r => r.label);
  const span = step.wall_ns;
  const minDrawn = span / 1500;  // ops narrower than ~1 px at full width are drawn 1 px wide; hover says the truth
  const groups = {};
  for (let i = 0; i < b.row.length; i++) (groups[b.kind[i]] = groups[b.kind[i]] || []).push(i);
  const traces = [];
  const order = ["range", "marker", "api", "fprop", "bprop", "recompute", "optim", "comm", "copy", "other"];
  for (const kind of order) {
    const idx = groups[kind];
    if (!idx) continue;
    const [name, color] = DIRECTIONS[kind] || HOST_KINDS[kind];
    const gpu = !!DIRECTIONS[kind];
    traces.push({
      type: "bar", orientation: "h", name, meta: gpu ? "gpu" : "host",
      y: idx.map(i => labels[b.row[i]]), base: idx.map(i => ms(b.s[i])),
      x: idx.map(i => ms(Math.max(b.d[i], minDrawn))),
      marker: { color, line: { width: gpu ? 0 : 0.5, color: "#777" } },
      customdata: idx.map(i => [str[b.name[i]], fmtNs(b.d[i]), str[b.layer[i]] || "-", str[b.launch[i]] || "-",
                               str[b.op[i]] || "-"]),
      hovertemplate: gpu
        ? "<b>%{customdata[0]}</b><br>%{customdata[1]}, starts %{base:.3f} ms<br>layer: %{customdata[2]}<br>op: %{customdata[4]}<br>launched by: %{customdata[3]}<extra>" + name + "</extra>"
        : "<b>%{customdata[0]}</b><br>%{customdata[1]}, starts %{base:.3f} ms<extra>" + name + "</extra>",
      width: 0.8,
      // range names inside their bars where they fit (layout.uniformtext hides the rest)
      text: kind === "range" ? idx.map(i => str[b.name[i]]) : undefined,
      textposition: kind === "range" ? "inside" : "none", insidetextanchor: "middle",
      textfont: { size: 10, color: "#1f2328" },
    });
  }
  const path = step.path;  // the step's critical path: rows of its own on top, a mark on each item's own row
  if (path) traces.push(...pathTraces(path, labels));
  const allLabels = path ? path.rows.concat(labels) : labels;
  const height = Math.max(260, 70 + 22 * allLabels.length);
  document.getElementById("timeline-note").textContent =
    (step.step ? `Step ${step.step} (${step.name})` : "The whole capture") + `, ${fmtNs(step.wall_ns)}, from ${fixed(step.from_ms, 3)} ms after the capture's first event: ` +
    `${fmtCount(step.gpu_ops)} GPU ops, ${fmtCount(b.row.length - step.gpu_ops)} ranges and API calls` +
    (step.clipped ? `; only its first ${fmtNs(step.clipped.at_ns)} drawn (${fmtCount(step.clipped.kept)} of its ` +
      `${fmtCount(step.clipped.events)} events): the whole step is in nsysql perfetto's trace, ` +
      DATA.command.replace("nsysql summarize", "nsysql perfetto") + ` --steps ${step.step} -o step.json.gz.` : ".");
  node.dataset.gpuOps = String(step.gpu_ops);
  node.dataset.step = String(step.step);
  const pad = span * 0.01;
  return Plotly.react(node, traces, legendBelow(node, traces, layout({
    shapes: step.clipped ? [{ type: "line", xref: "x", yref: "paper", x0: ms(step.clipped.at_ns), x1: ms(step.clipped.at_ns),
                              y0: 0, y1: 1, line: { color: "#cf222e", dash: "dash", width: 1 } }] : [],
    annotations: step.clipped ? [{ xref: "x", yref: "paper", x: ms(step.clipped.at_ns), y: 1, yanchor: "bottom",
                                   text: "not drawn past here (see below)", showarrow: false,
                                   font: { color: "#cf222e", size: 11 } }] : [],
    barmode: "overlay", height, uniformtext: { mode: "hide", minsize: 9 }, margin: { l: 10, r: 20, t: 10, b: 40 }, hovermode: "closest", dragmode: "zoom",
    yaxis: { type: "category", categoryorder: "array", categoryarray: allLabels, autorange: "reversed",
             automargin: true, fixedrange: true, tickfont: { size: 11 } },
    xaxis: { title: { text: step.step ? "ms since the step's start" : "ms since the first event" }, range: [-pad / 1e6, (span + pad) / 1e6], zeroline: false },
    margin: { l: 10, r: 20, t: 30, b: 40 },
  }), true), Object.assign({}, PLOT_CONFIG, { scrollZoom: true }));
}

// per kind: the path's items on its own rows (meta "path"), and a strip under each item on the row of the thread or
// stream it ran on (meta "path-mark"), drawn at their true width: the path's items tile the step
function pathTraces(path, labels) {
  const out = [];
  for (const k of Object.keys(CP_KINDS)) {
    const [name, color] = CP_KINDS[k];
    const bi = path.bars.kind.map((kind, i) => kind === k ? i : -1).filter(i => i >= 0);
    if (!bi.length) continue;
    const b = path.bars;
    out.push({
      type: "bar", orientation: "h", name: "path: " + name, meta: "path", legendgroup: "path-" + k,
      y: bi.map(i => path.rows[b.row[i]]), base: bi.map(i => ms(b.s[i])), x: bi.map(i => ms(b.d[i])),
      marker: { color, line: { width: 0 } }, width: 0.8,
      customdata: bi.map(i => [b.name[i], fmtNs(b.d[i]), b.kind[i]]),
      hovertemplate: "<b>%{customdata[0]}</b><br>%{customdata[1]}, starts %{base:.3f} ms<extra>" + name + "</extra>",
    });
    const m = path.marks;
    const mi = m.kind.map((kind, i) => kind === k ? i : -1).filter(i => i >= 0);
    if (!mi.length) continue;
    out.push({
      type: "bar", orientation: "h", name: "path: " + name, meta: "path-mark", legendgroup: "path-" + k,
      showlegend: false, y: mi.map(i => labels[m.row[i]]), base: mi.map(i => ms(m.s[i])), x: mi.map(i => ms(m.d[i])),
      width: 0.25, offset: 0.15, marker: { color, line: { width: 0.5, color: "#222" } },
      customdata: mi.map(i => fmtNs(m.d[i])),
      hovertemplate: "on the critical path: %{customdata}, starts %{base:.3f} ms<extra>" + name + "</extra>",
    });
  }
  return out;
}

function renderTimelineSelector() {
  const sel = document.getElementById("step-select");
  TL.steps.forEach(s => {
    const what = s.step ? `step ${s.step}` : s.name;
    const tags = [s.step && s.step === TL.median ? "median" : null, s.analysed ? null : "warm-up",
                  s.carried ? null : "not in this page"].filter(Boolean);
    sel.append(el("option", { value: String(s.step), disabled: s.carried ? null : "",
                              text: what + (tags.length ? ` (${tags.join(", ")})` : "") + ` — ${fmtNs(s.wall_ns)}` }));
  });
  if (TL.first !== null && TL.first !== undefined) sel.value = String(TL.first);
  sel.addEventListener("change", () => drawTimeline(Number(sel.value)));
  if (TL.steps.some(s => s.step)) renderCarried();
  return TL.first;
}

// which steps the page carries, and the command that writes a page with the others
function renderCarried() {
  const carried = TL.steps.filter(s => s.carried).map(s => s.step);
  const left = TL.steps.filter(s => !s.carried).map(s => s.step);
  const box = document.getElementById("timeline-carried");
  box.dataset.carried = carried.join(",");
  const cmd = DATA.command.replace("nsysql summarize", "nsysql html");
  const analysedLeft = TL.steps.filter(s => !s.carried && s.analysed).map(s => s.step);
  const suggest = (analysedLeft.length ? analysedLeft : left).slice(0, 3);
  let text = `This page carries the timeline${carried.length === 1 ? "" : "s"} of ${stepList(carried)} ` +
    `(of ${TL.steps.length} step${TL.steps.length === 1 ? "" : "s"}${TL.chosen ? `, as --steps ${TL.chosen} chose` : ""}).`;
  if (left.length) {
    const warm = TL.steps.filter(s => !s.carried && !s.analysed).map(s => s.step);
    const why = TL.chosen ? [`${stepList(left)}.`]
      : [analysedLeft.length ? `${stepList(analysedLeft)}, to keep the page small` : null,
         warm.length ? `${stepList(warm)} (warm-up: by default the page carries analysed steps only)` : null]
        .filter(Boolean);
    text += ` Left out: ${why.join("; ")}${TL.chosen ? "" : "."} A page with other steps' timelines: `;
    box.append(text, el("code", { text: `${cmd} --steps ${ranges(suggest)} -o steps.html` }),
               " (any steps, e.g. --steps 3,5-7; --steps all carries every one, and can make a large page).");
  } else box.append(text);
}
function ranges(numbers) {
  const out = [];
  for (const n of numbers) {
    const last = out[out.length - 1];
    if (last && last[1] === n - 1) last[1] = n; else out.push([n, n]);
  }
  return out.map(([a, b]) => a === b ? String(a) : `${a}-${b}`).join(",");
}
function stepList(numbers) {
  return (numbers.length === 1 ? "step " : "steps ") + ranges(numbers).replace(/,/g, ", ");
}

// -- table of contents, loading, start -----------------------------------------------------------------------
function renderToc() {
  const nav = document.getElementById("toc");
  document.querySelectorAll("main > section").forEach(sec => {
    if (!sec.classList.contains("hidden")) nav.append(el("a", { href: `#${sec.id}`, text: sec.querySelector("h2").textContent }));
  });
}

async function loadPlotly() {
  const s = document.createElement("script");
  s.textContent = await inflate("plotly-gz");
  document.head.append(s);
  if (!window.Plotly) throw new Error("Plotly did not load");
}

const frame = () => new Promise(resolve => requestAnimationFrame(() => setTimeout(resolve, 0)));

async function main() {
  renderHeader();
  renderCards();
  renderBound();
  renderTables();
  const findingCharts = renderFindings();
  const first = renderTimelineSelector();
  performance.mark("nsysql-tables");
  if (previewSteps()) { await frame(); performance.mark("nsysql-preview"); }
  await loadPlotly();
  performance.mark("nsysql-plotly");
  // the charts in page order, the first one painted before the rest are drawn (the timeline, the largest, last)
  const charts = [drawSteps, drawPace, drawBound, drawGpus, drawUtilMap, drawLayers, drawRanks, ...findingCharts];
  let marked = false;
  for (const draw of charts) {
    const done = draw();
    if (!done) continue;
    await done;
    if (!marked) { marked = true; await frame(); performance.mark("nsysql-first-chart"); }
  }
  await drawTimeline(first);
  if (!marked) performance.mark("nsysql-first-chart");
  renderToc();
  performance.mark("nsysql-charts");
  document.body.dataset.ready = "1";
}

main().catch(err => { console.error(err); document.body.dataset.error = String(err); });
