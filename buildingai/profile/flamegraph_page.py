"""The flame graph page's HTML, CSS and JavaScript, all inline so the file opens offline.

Placeholders (``@TITLE@``, ``@TOTALS@``, ``@OPS@``, ``@MODULES@``, ``@GRAPH@``, ``@DATA@``) are
filled by ``flamegraph.write_flamegraph``; ``@DATA@`` is the frame tree as JSON.
"""

PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>@TITLE@</title>
<style>
body { font: 13px/1.4 system-ui, sans-serif; margin: 16px; color: #222; }
h1 { font-size: 18px; margin: 0 0 4px; }
h2 { font-size: 15px; margin: 18px 0 6px; }
#controls { margin: 8px 0; display: flex; gap: 8px; align-items: center; }
#search { width: 260px; padding: 3px 6px; }
#chart { position: relative; width: 100%; border: 1px solid #ccc; overflow: hidden; }
.frame { position: absolute; height: 20px; box-sizing: border-box; border: 1px solid #fff;
  overflow: hidden; white-space: nowrap; text-overflow: ellipsis; padding: 0 3px;
  font-size: 12px; line-height: 18px; cursor: pointer; border-radius: 2px; }
.frame.match { outline: 2px solid #d0006f; outline-offset: -2px; }
.frame.dim { opacity: 0.35; }
#tooltip { position: fixed; display: none; background: #222; color: #fff; padding: 6px 8px;
  border-radius: 4px; pointer-events: none; font-size: 12px; white-space: pre; z-index: 10; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; }
td, th { padding: 2px 10px; text-align: right; border-bottom: 1px solid #eee; }
td:first-child, th:first-child { text-align: left; font-family: ui-monospace, monospace; }
#totals { font-family: ui-monospace, monospace; font-size: 12px; }
</style>
</head>
<body>
<h1>@TITLE@</h1>
<div id="totals">@TOTALS@</div>
<div id="controls">
  <input id="search" type="search" placeholder="search frames (op or module name)">
  <button id="reset" type="button">reset zoom</button>
  <span id="matched"></span>
</div>
<div id="chart"></div>
<div id="tooltip"></div>
<h2>Ops</h2>
<table id="ops"><thead><tr><th>op</th><th>calls</th><th>time ms</th><th>array ms</th>
<th>dispatch ms</th><th>FLOPs</th><th>GFLOP/s</th></tr></thead><tbody>
@OPS@
</tbody></table>
<h2>Modules</h2>
<table id="modules"><thead><tr><th>module</th><th>ops</th><th>time ms</th><th>array ms</th>
<th>dispatch ms</th><th>FLOPs</th><th>GFLOP/s</th></tr></thead><tbody>
@MODULES@
</tbody></table>
@GRAPH@
<script type="application/json" id="profile-data">@DATA@</script>
<script>
"use strict";
(function () {
  var root = JSON.parse(document.getElementById("profile-data").textContent);
  var chart = document.getElementById("chart");
  var tooltip = document.getElementById("tooltip");
  var search = document.getElementById("search");
  var matched = document.getElementById("matched");
  var ROW = 20;
  var focus = root;

  function link(node, parent) {
    node.parent = parent;
    node.children.forEach(function (child) { link(child, node); });
  }
  link(root, null);

  function depthOf(node) {
    var deepest = 0;
    node.children.forEach(function (c) { deepest = Math.max(deepest, 1 + depthOf(c)); });
    return deepest;
  }

  function color(name) {
    var hash = 0;
    for (var i = 0; i < name.length; i++) { hash = (hash * 31 + name.charCodeAt(i)) | 0; }
    var hue = name.indexOf("backward") === 0 || name.indexOf("grad of") === 0 ? 200 : 20;
    if (name === "data wait" || name === "next batch") { hue = 120; }
    if (name.charAt(0) === "(") { return "hsl(0, 0%, 80%)"; }
    return "hsl(" + (hue + (Math.abs(hash) % 40)) + ", 75%, " + (62 + Math.abs(hash) % 14) + "%)";
  }

  function ms(ns) { return (ns / 1e6).toFixed(3) + " ms"; }

  function path(node) {
    var names = [];
    for (var n = node; n && n.parent; n = n.parent) { names.unshift(n.name); }
    return names.join(" > ") || "all";
  }

  function draw() {
    chart.textContent = "";
    var ancestors = [];
    for (var n = focus; n; n = n.parent) { ancestors.unshift(n); }
    var width = chart.clientWidth || 800;
    var rows = ancestors.length + depthOf(focus);
    chart.style.height = (rows * ROW + 2) + "px";
    ancestors.forEach(function (node, depth) { place(node, depth, 0, width); });
    layout(focus, ancestors.length - 1, 0, width);
    highlight();
  }

  function layout(node, depth, x, width) {
    var offset = x;
    node.children.forEach(function (child) {
      var w = node.value ? width * child.value / node.value : 0;
      if (w >= 1) {
        place(child, depth + 1, offset, w);
        layout(child, depth + 1, offset, w);
      }
      offset += w;
    });
  }

  function place(node, depth, x, w) {
    var div = document.createElement("div");
    div.className = "frame";
    div.style.left = x + "px";
    div.style.top = (depth * ROW) + "px";
    div.style.width = w + "px";
    div.style.background = color(node.name);
    div.textContent = w > 30 ? node.name : "";
    div.dataset.name = node.name;
    div.addEventListener("click", function () { focus = node; draw(); });
    div.addEventListener("mousemove", function (event) { showTip(node, event); });
    div.addEventListener("mouseleave", function () { tooltip.style.display = "none"; });
    node.div = div;
    chart.appendChild(div);
  }

  function showTip(node, event) {
    var lines = [path(node), ms(node.value) + " (" + (100 * node.value / root.value).toFixed(1) +
      "% of all)"];
    if (node.calls) { lines.push(node.calls + " calls"); }
    if (node.flops) {
      lines.push(node.flops.toLocaleString() + " FLOPs, " +
        (node.flops / Math.max(node.value, 1)).toFixed(2) + " GFLOP/s");
    }
    tooltip.textContent = lines.join("\\n");
    tooltip.style.left = (event.clientX + 12) + "px";
    tooltip.style.top = (event.clientY + 12) + "px";
    tooltip.style.display = "block";
  }

  function highlight() {
    var query = search.value.trim().toLowerCase();
    var total = 0;
    var frames = chart.querySelectorAll(".frame");
    for (var i = 0; i < frames.length; i++) {
      var hit = query && frames[i].dataset.name.toLowerCase().indexOf(query) >= 0;
      frames[i].classList.toggle("match", !!hit);
      frames[i].classList.toggle("dim", !!query && !hit);
    }
    if (query) {
      (function walk(node, counted) {
        var hit = node.name.toLowerCase().indexOf(query) >= 0;
        if (hit && !counted) { total += node.value; }
        node.children.forEach(function (c) { walk(c, counted || hit); });
      })(root, false);
      matched.textContent = "matched " + (100 * total / root.value).toFixed(1) + "% of time";
    } else {
      matched.textContent = "";
    }
  }

  search.addEventListener("input", highlight);
  document.getElementById("reset").addEventListener("click", function () {
    focus = root; draw();
  });
  window.addEventListener("resize", draw);
  draw();
})();
</script>
</body>
</html>
"""
