"""The page at ``/``: draw a digit (or upload a picture of one) and see the model's prediction.

Self-contained (inline CSS and JS, no network beyond this server). The drawing is framed as
MNIST's digits were: the ink's bounding box scaled to fit 20 x 20 (keeping its shape), then
shifted so its centre of mass falls on the centre of 28 x 28. Pixels go to ``/predict`` as
floats in [0, 1] (white ink on black), nested to the input shape ``/metadata`` reports. The
answer shows the three most likely classes with their probabilities, and every class's below.
"""

PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<title>BuildingAI model server</title>
<style>
  body { font: 15px/1.4 system-ui, sans-serif; margin: 2rem auto; max-width: 44rem; color: #222;
         padding: 0 1rem; }
  h1 { font-size: 1.3rem; }
  #model { color: #555; font-size: 0.9rem; }
  .row { display: flex; gap: 2rem; flex-wrap: wrap; }
  #pad { background: #000; border: 1px solid #888; touch-action: none; cursor: crosshair; }
  #small { border: 1px solid #888; image-rendering: pixelated; width: 84px; height: 84px; }
  button, label.file { margin: 0.4rem 0.4rem 0 0; padding: 0.3rem 0.8rem; font: inherit; }
  label.file { border: 1px solid #888; border-radius: 3px; display: inline-block; cursor: pointer; }
  label.file input { display: none; }
  #status { min-height: 1.4em; color: #a00; }
  #prediction { font-size: 1.6rem; font-weight: 600; min-height: 2rem; }
  ol.classes { list-style: none; padding: 0; margin: 0; width: 16rem; }
  ol.classes li { display: grid; grid-template-columns: 5.5rem 1fr 3.5rem; gap: 0.4rem;
                  align-items: center; margin: 2px 0; font-size: 0.85rem; }
  ol.classes .track { display: block; background: #eee; height: 0.9rem; }
  ol.classes .bar { display: block; background: #9bd; height: 100%; }
  ol.classes li.top .bar { background: #37c; }
  ol.classes li.top { font-weight: 600; }
  #top li { font-size: 1rem; margin: 4px 0; }
  #top .track { height: 1.1rem; }
  #all { margin-top: 0.8rem; font-size: 0.85rem; color: #555; }
</style>
</head>
<body>
<h1>Draw a digit</h1>
<p id="model">loading model description&hellip;</p>
<div class="row">
  <div>
    <canvas id="pad" width="280" height="280" aria-label="drawing pad"></canvas><br>
    <button id="predict" disabled>Predict</button>
    <button id="clear">Clear</button>
    <label class="file">Upload image<input id="upload" type="file" accept="image/*"></label>
    <p id="status" role="status"></p>
  </div>
  <div>
    <div>Model input (28 &times; 28):</div>
    <canvas id="small" width="28" height="28"></canvas>
    <div id="prediction" aria-live="polite"></div>
    <ol id="top" class="classes" aria-label="the three most likely classes"></ol>
    <details id="all"><summary>All classes</summary>
      <ol id="probabilities" class="classes"></ol>
    </details>
  </div>
</div>
<script>
"use strict";
const pad = document.getElementById("pad");
const ink = pad.getContext("2d");
const small = document.getElementById("small");
const status = document.getElementById("status");
let inputShape = null, labels = null, drawing = false, last = null;

function clearPad() {
  ink.fillStyle = "#000";
  ink.fillRect(0, 0, pad.width, pad.height);
  small.getContext("2d").clearRect(0, 0, 28, 28);
  document.getElementById("prediction").textContent = "";
  document.getElementById("top").replaceChildren();
  document.getElementById("probabilities").replaceChildren();
}

function point(event) {
  const box = pad.getBoundingClientRect();
  return [(event.clientX - box.left) * pad.width / box.width,
          (event.clientY - box.top) * pad.height / box.height];
}

function stroke(from, to) {
  ink.strokeStyle = "#fff";
  ink.lineWidth = 26;
  ink.lineCap = "round";
  ink.lineJoin = "round";
  ink.beginPath();
  ink.moveTo(from[0], from[1]);
  ink.lineTo(to[0], to[1]);
  ink.stroke();
}

pad.addEventListener("pointerdown", (event) => {
  drawing = true; last = point(event); stroke(last, last);
});
pad.addEventListener("pointermove", (event) => {
  if (!drawing) return;
  const next = point(event); stroke(last, next); last = next;
});
for (const name of ["pointerup", "pointerleave"]) {
  pad.addEventListener(name, () => { drawing = false; });
}

// MNIST's framing: the ink's bounding box scaled to fit 20 x 20 (keeping its shape), then
// shifted by whole pixels so that its centre of mass falls on the centre of 28 x 28. A digit
// drawn small, large or off to one side reaches the model as the digits it learned from.
function pixels() {
  const data = ink.getImageData(0, 0, pad.width, pad.height).data;
  let top = pad.height, left = pad.width, bottom = -1, right = -1;
  for (let y = 0; y < pad.height; y++) {
    for (let x = 0; x < pad.width; x++) {
      if (data[(y * pad.width + x) * 4] > 30) {
        top = Math.min(top, y); bottom = Math.max(bottom, y);
        left = Math.min(left, x); right = Math.max(right, x);
      }
    }
  }
  const target = small.getContext("2d");
  target.fillStyle = "#000";
  target.fillRect(0, 0, 28, 28);
  if (bottom < 0) return null;
  const width = right - left + 1, height = bottom - top + 1;
  const scale = 20 / Math.max(width, height);
  const w = Math.max(1, Math.round(width * scale)), h = Math.max(1, Math.round(height * scale));
  const box = document.createElement("canvas");
  box.width = w; box.height = h;
  const boxInk = box.getContext("2d");
  boxInk.imageSmoothingEnabled = true;
  boxInk.imageSmoothingQuality = "high";
  boxInk.drawImage(pad, left, top, width, height, 0, 0, w, h);
  const boxData = boxInk.getImageData(0, 0, w, h).data;
  let mass = 0, sumX = 0, sumY = 0;
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      const v = boxData[(y * w + x) * 4];
      mass += v; sumX += v * (x + 0.5); sumY += v * (y + 0.5);
    }
  }
  const centreX = mass > 0 ? sumX / mass : w / 2, centreY = mass > 0 ? sumY / mass : h / 2;
  // whole pixels keep the strokes sharp; the box stays inside the image
  const dx = Math.min(28 - w, Math.max(0, Math.round(14 - centreX)));
  const dy = Math.min(28 - h, Math.max(0, Math.round(14 - centreY)));
  target.drawImage(box, dx, dy);
  const scaled = target.getImageData(0, 0, 28, 28).data;
  const values = new Array(784);
  for (let i = 0; i < 784; i++) values[i] = scaled[i * 4] / 255;
  return values;
}

function nest(flat, shape) {
  if (shape.length <= 1) return flat;
  const [first, ...rest] = shape;
  const step = flat.length / first, out = [];
  for (let i = 0; i < first; i++) out.push(nest(flat.slice(i * step, (i + 1) * step), rest));
  return out;
}

function probabilities(scores) {
  const sum = scores.reduce((a, b) => a + b, 0);
  if (scores.every((v) => v >= 0 && v <= 1) && Math.abs(sum - 1) < 1e-3) return scores;
  const top = Math.max(...scores);
  const exps = scores.map((v) => Math.exp(v - top));
  const total = exps.reduce((a, b) => a + b, 0);
  return exps.map((v) => v / total);
}

function classItem(label, p, top) {
  const item = document.createElement("li");
  item.dataset.label = label;
  item.dataset.probability = p.toFixed(6);
  if (top) item.className = "top";
  const name = document.createElement("span"), track = document.createElement("span");
  const bar = document.createElement("span"), value = document.createElement("span");
  name.textContent = label;
  bar.className = "bar";
  bar.style.width = (100 * p).toFixed(1) + "%";
  track.className = "track";
  track.appendChild(bar);
  value.textContent = (100 * p).toFixed(1) + "%";
  item.append(name, track, value);
  return item;
}

function show(scores) {
  const probs = probabilities(scores);
  const name = (i) => (labels && labels[i] !== undefined ? labels[i] : String(i));
  // most likely first; equal probabilities keep class order
  const ranked = probs.map((p, i) => i).sort((a, b) => probs[b] - probs[a] || a - b);
  const best = ranked[0];
  document.getElementById("prediction").textContent = "Prediction: " + name(best);
  document.getElementById("top").replaceChildren(
    ...ranked.slice(0, 3).map((i) => classItem(name(i), probs[i], i === best)));
  document.getElementById("probabilities").replaceChildren(
    ...probs.map((p, i) => classItem(name(i), p, i === best)));
}

async function predict() {
  status.textContent = "";
  const values = pixels();
  if (values === null) { status.textContent = "Draw a digit first."; return; }
  try {
    const answer = await fetch("predict", {
      method: "POST",
      headers: {"Content-Type": "application/json"},
      body: JSON.stringify({inputs: [nest(values, inputShape)]}),
    });
    const body = await answer.json();
    if (!answer.ok) { status.textContent = "Server: " + body.detail; return; }
    show(body.outputs[0].flat(Infinity));
  } catch (error) {
    status.textContent = "Request failed: " + error;
  }
}

function upload(file) {
  const picture = new Image();
  picture.onload = () => {
    clearPad();
    const scale = Math.min(pad.width / picture.width, pad.height / picture.height);
    const w = picture.width * scale, h = picture.height * scale;
    ink.drawImage(picture, (pad.width - w) / 2, (pad.height - h) / 2, w, h);
    const image = ink.getImageData(0, 0, pad.width, pad.height), data = image.data;
    let mean = 0;
    for (let i = 0; i < data.length; i += 4) {
      data[i] = 0.299 * data[i] + 0.587 * data[i + 1] + 0.114 * data[i + 2];
      mean += data[i];
    }
    const invert = mean / (data.length / 4) > 127; // dark ink on light paper
    for (let i = 0; i < data.length; i += 4) {
      const v = invert ? 255 - data[i] : data[i];
      data[i] = data[i + 1] = data[i + 2] = v; data[i + 3] = 255;
    }
    ink.putImageData(image, 0, 0);
    URL.revokeObjectURL(picture.src);
    predict();
  };
  picture.onerror = () => { status.textContent = "That file is not an image."; };
  picture.src = URL.createObjectURL(file);
}

document.getElementById("clear").addEventListener("click", clearPad);
document.getElementById("predict").addEventListener("click", predict);
document.getElementById("upload").addEventListener("change", (event) => {
  if (event.target.files.length) upload(event.target.files[0]);
});

clearPad();
fetch("metadata").then((answer) => answer.json()).then((meta) => {
  const shape = meta.input.shape.slice(1);
  labels = meta.labels;
  const size = shape.reduce((a, b) => a * (b === null ? 1 : b), 1);
  const described = meta.kind + " " + meta.source + ", input [N, " +
    shape.map((d) => (d === null ? "?" : d)).join(", ") + "] " + meta.input.dtype;
  document.getElementById("model").textContent = described;
  if (size !== 784 || shape.includes(null)) {
    status.textContent = "This model does not take 28 x 28 images, so the pad cannot feed it.";
    return;
  }
  inputShape = shape;
  document.getElementById("predict").disabled = false;
}).catch((error) => { status.textContent = "Cannot read /metadata: " + error; });
</script>
</body>
</html>
"""
