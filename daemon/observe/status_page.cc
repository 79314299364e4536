#include "daemon/observe/status_page.h"

namespace gossipd::daemon {

const std::string& status_page_html() {
  static const std::string page = R"html(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>gossipd</title>
<style>
body{font:14px system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.3em;margin:0 0 .6em}
.state{padding:.1em .5em;border-radius:.3em;background:#ddd}
.state.training{background:#cfe8cf}.state.failed,.state.cut_off{background:#f3c4c4}
.tiles{display:flex;flex-wrap:wrap;gap:.5em;margin-bottom:1em}
.tiles div{background:#f4f4f4;padding:.4em .6em;border-radius:.3em;min-width:10em}
.tiles b{display:block;font-size:1.2em}
.plots{display:flex;flex-wrap:wrap;gap:1em}
svg{background:#fafafa;border:1px solid #ddd}
svg text{font-size:11px;fill:#555}
polyline{fill:none;stroke:#2a6fb0;stroke-width:1.5}
circle.pt{fill:#2a6fb0}
table{border-collapse:collapse}td,th{padding:.2em .8em;border-bottom:1px solid #eee;text-align:left}
#error{color:#b00}
</style></head><body>
<h1>gossipd <span id="who"></span> <span id="state" class="state"></span></h1>
<div id="error"></div>
<div class="tiles">
<div>round<b id="round">-</b></div><div>epoch<b id="epoch">-</b></div>
<div>rounds/s<b id="rps">-</b></div><div>bytes/s sent<b id="bps">-</b></div>
<div>consensus distance<b id="consensus">-</b></div><div>segments skipped<b id="skipped">-</b></div>
<div>loss<b id="loss">-</b></div><div>test accuracy<b id="accuracy">-</b></div>
</div>
<div class="plots">
<div>test accuracy by epoch<br><svg id="acc" width="420" height="220"></svg></div>
<div>loss by epoch<br><svg id="lossplot" width="420" height="220"></svg></div>
<div>bytes/s sent (since this page opened)<br><svg id="bytes" width="420" height="220"></svg></div>
</div>
<h2>members in this member's view</h2>
<table><thead><tr><th>member</th><th></th></tr></thead><tbody id="members"></tbody></table>
<script>
"use strict";
const NS = "http://www.w3.org/2000/svg";
const sent = [];  // [seconds since the page opened, bytes sent]
const opened = performance.now();
function el(name, attrs, text) {
  const e = document.createElementNS(NS, name);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  return e;
}
function fmt(v) { return Math.abs(v) >= 1e4 ? v.toExponential(2) : +v.toPrecision(4); }
function plot(id, pts) {
  const svg = document.getElementById(id);
  while (svg.firstChild) svg.removeChild(svg.firstChild);
  const W = +svg.getAttribute("width"), H = +svg.getAttribute("height"), L = 50, B = 20, T = 10, R = 10;
  if (!pts.length) { svg.appendChild(el("text", {x: L, y: H / 2}, "no points yet")); return; }
  const xs = pts.map(p => p[0]), ys = pts.map(p => p[1]);
  let x0 = Math.min(...xs), x1 = Math.max(...xs), y0 = Math.min(...ys), y1 = Math.max(...ys);
  if (x1 === x0) x1 = x0 + 1;
  if (y1 === y0) { y0 -= 0.5; y1 += 0.5; }
  const sx = x => L + (x - x0) / (x1 - x0) * (W - L - R), sy = y => H - B - (y - y0) / (y1 - y0) * (H - B - T);
  svg.appendChild(el("line", {x1: L, y1: H - B, x2: W - R, y2: H - B, stroke: "#999"}));
  svg.appendChild(el("line", {x1: L, y1: T, x2: L, y2: H - B, stroke: "#999"}));
  svg.appendChild(el("text", {x: 2, y: T + 8}, fmt(y1)));
  svg.appendChild(el("text", {x: 2, y: H - B}, fmt(y0)));
  svg.appendChild(el("text", {x: L, y: H - 4}, fmt(x0)));
  svg.appendChild(el("text", {x: W - R - 40, y: H - 4}, fmt(x1)));
  svg.appendChild(el("polyline", {points: pts.map(p => sx(p[0]) + "," + sy(p[1])).join(" ")}));
  for (const p of pts) svg.appendChild(el("circle", {class: "pt", cx: sx(p[0]), cy: sy(p[1]), r: 2.5}));
}
function set(id, v) { document.getElementById(id).textContent = v; }
async function json(path) {
  const r = await fetch(path, {cache: "no-store"});
  if (!r.ok) throw new Error(path + ": HTTP " + r.status);
  return r.json();
}
async function tick() {
  try {
    const [s, h] = await Promise.all([json("/status"), json("/history")]);
    set("who", s.id + " \u00b7 " + s.algo);
    const st = document.getElementById("state");
    st.textContent = s.state; st.className = "state " + s.state;
    set("round", s.round); set("epoch", s.epoch);
    set("rps", fmt(+s.rounds_per_second || 0));
    set("consensus", fmt(+s.consensus_distance || 0)); set("skipped", s.segments_skipped);
    set("loss", fmt(+s.loss || 0)); set("accuracy", fmt(+s.test_accuracy || 0));
    const now = (performance.now() - opened) / 1000;
    sent.push([now, +s.bytes_sent]);
    const rates = [];
    for (let i = 1; i < sent.length; ++i)
      rates.push([sent[i][0], (sent[i][1] - sent[i - 1][1]) / Math.max(1e-3, sent[i][0] - sent[i - 1][0])]);
    if (rates.length) set("bps", fmt(rates[rates.length - 1][1]));
    const x = r => +(r.progress || r.epoch);
    plot("acc", h.map(r => [x(r), +r.test_accuracy]));
    plot("lossplot", h.map(r => [x(r), +r.loss]));
    plot("bytes", rates);
    const rows = document.getElementById("members");
    rows.textContent = "";
    for (const m of s.members || []) {
      const tr = document.createElement("tr");
      tr.innerHTML = "<td></td><td></td>";
      tr.children[0].textContent = m;
      tr.children[1].textContent = m === s.id ? "this member" : "";
      rows.appendChild(tr);
    }
    set("error", "");
  } catch (e) {
    set("error", "not answering: " + e.message);
  }
}
tick();
setInterval(tick, 1000);
</script></body></html>
)html";
  return page;
}

}  // namespace gossipd::daemon
