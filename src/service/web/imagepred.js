// The SAM-1-style interactive image predictor on the page (serve's "predict_image", the official
// predict of the sam3_for_sam1_task notebook). An uploaded image; clicks on it (shift-click or the
// negative toggle: background) and a dragged box go to the server with every click so far, asking for
// several candidate masks (multimask) or one. The answer's candidates are listed with their scores;
// the best is picked, another can be; the picked candidate's low-res logits go with the next click as
// mask_input, as the notebook feeds logits[np.argmax(scores)] back. Coordinates are pixels of the
// image. Loaded before app.js (its `$`, api(), request(), decodeCounts(), setStatus(), fail(),
// publishState() and clicks.js's drawPlus() / drawBox() are used at call time).
'use strict';

const imagePred = {
  resource: null,    // 'upload:ID' of the image on the server
  name: '',
  width: 0,
  height: 0,
  image: null,
  points: [],        // [[x, y]] in image pixels
  labels: [],        // 1 object, 0 background
  box: null,         // [x0, y0, x1, y1] in image pixels
  answer: null,      // the last answer: {width, height, scores, masks, best, low_res_logits}
  picked: null,      // index of the picked candidate of `answer`
  drag: null,        // the press in progress
  queue: Promise.resolve(),
  done: 0,           // predictions answered (tests wait on it)
  lastRequest: null, // the last request, its mask_input summarised (shape and where it came from)
};

function imageCanvas() { return $('image-overlay'); }

// Pointer -> image pixels, rounded to whole pixels (as the notebooks' coordinates are).
function imagePoint(e) {
  const c = imageCanvas();
  const r = c.getBoundingClientRect();
  const x = (e.clientX - r.left - c.clientLeft) / c.clientWidth * imagePred.width;
  const y = (e.clientY - r.top - c.clientTop) / c.clientHeight * imagePred.height;
  return [Math.min(imagePred.width, Math.max(0, Math.round(x))), Math.min(imagePred.height, Math.max(0, Math.round(y)))];
}

function candidateArea(k) {
  return maskArea(imagePred.answer.masks[k]);
}

function drawImagePrediction() {
  const c = imageCanvas();
  const ctx = c.getContext('2d');
  const w = c.width, h = c.height;
  ctx.clearRect(0, 0, w, h);
  const a = imagePred.answer;
  if (a && imagePred.picked !== null) {
    const img = ctx.createImageData(w, h);
    let pos = 0;
    decodeCounts(a.masks[imagePred.picked].counts).forEach((n, i) => {
      if (i % 2 === 1)
        for (let j = pos; j < pos + n; j++) {
          const o = 4 * ((j % h) * w + Math.floor(j / h));  // column-major runs
          img.data[o] = 47; img.data[o + 1] = 111; img.data[o + 2] = 237; img.data[o + 3] = 128;
        }
      pos += n;
    });
    ctx.putImageData(img, 0, 0);
  }
  const arm = Math.max(4, Math.round(Math.min(w, h) / 40));
  ctx.lineWidth = Math.max(2, Math.round(h / 120));
  const rel = (b) => [b[0] / w, b[1] / h, (b[2] - b[0]) / w, (b[3] - b[1]) / h];
  if (imagePred.box) drawBox(ctx, rel(imagePred.box), '#2f6fed', w, h, false);
  imagePred.points.forEach((p, i) => drawPlus(ctx, p[0], p[1], arm, imagePred.labels[i] === 0));
  const d = imagePred.drag;
  if (d && d.moved)
    drawBox(ctx, rel([Math.min(d.start[0], d.end[0]), Math.min(d.start[1], d.end[1]), Math.max(d.start[0], d.end[0]),
                      Math.max(d.start[1], d.end[1])]), '#fff', w, h, true);
}

function renderCandidates() {
  const list = $('candidates');
  list.replaceChildren();
  const a = imagePred.answer;
  if (!a) return;
  a.scores.forEach((score, k) => {
    const li = document.createElement('li');
    li.dataset.index = k;
    li.classList.toggle('picked', k === imagePred.picked);
    const b = document.createElement('button');
    b.type = 'button';
    b.className = 'pick';
    b.textContent = k === imagePred.picked ? 'Picked' : 'Pick';
    b.addEventListener('click', () => pickCandidate(k));
    const label = document.createElement('span');
    label.className = 'label';
    label.textContent = 'candidate ' + k + ': score ' + score.toFixed(4) + ', ' + candidateArea(k) + ' px' +
                        (k === a.best ? ' (best)' : '');
    li.append(b, label);
    list.append(li);
  });
}

function pickCandidate(k) {
  imagePred.picked = k;
  renderCandidates();
  drawImagePrediction();
  setStatus('Candidate ' + k + ' picked: the next click refines it.', 'image-picked');
}

// Every click so far, the box, and the picked candidate's low-res logits as mask_input.
async function predictImage() {
  const body = {type: 'predict_image', resource_path: imagePred.resource,
                multimask_output: $('image-multimask').checked};
  if (imagePred.points.length) {
    body.point_coords = imagePred.points;
    body.point_labels = imagePred.labels;
  }
  if (imagePred.box) body.box = imagePred.box;
  const from = imagePred.answer && imagePred.picked !== null ? {answer: imagePred.done, candidate: imagePred.picked}
                                                             : null;
  if (from) body.mask_input = imagePred.answer.low_res_logits[imagePred.picked];
  imagePred.lastRequest = Object.assign({}, body, {
    mask_input: from ? [body.mask_input.length, body.mask_input[0].length] : null, mask_input_from: from});
  setStatus('Predicting on ' + imagePred.name + '…', 'image-predicting');
  let r;
  try {
    r = await request(body);
  } catch (e) {
    throw new Error('the server refused the prediction on ' + imagePred.name + ': ' + e.message);
  }
  imagePred.answer = r;
  imagePred.picked = r.best;
  imagePred.done++;
  renderCandidates();
  drawImagePrediction();
  setStatus(r.scores.length + ' candidate' + (r.scores.length > 1 ? 's' : '') + ' on ' + imagePred.name +
            ': pick one, then click again to refine it.', 'image-predicted');
}

function enqueueImagePrediction(change) {
  imagePred.queue = imagePred.queue.then(() => { change(); drawImagePrediction(); return predictImage(); })
    .catch(fail);
}

function onImagePointerDown(e) {
  if (e.button !== 0 || !imagePred.resource) return;
  e.preventDefault();
  try { imageCanvas().setPointerCapture(e.pointerId); } catch (err) { /* synthetic events have no pointer */ }
  const p = imagePoint(e);
  imagePred.drag = {start: p, end: p, css: [e.clientX, e.clientY], moved: false,
                    negative: $('image-neg').checked !== !!e.shiftKey};
}

function onImagePointerMove(e) {
  const d = imagePred.drag;
  if (!d) return;
  d.end = imagePoint(e);
  if (Math.hypot(e.clientX - d.css[0], e.clientY - d.css[1]) >= DRAG_CSS_PX) d.moved = true;
  if (d.moved) drawImagePrediction();
}

function onImagePointerUp(e) {
  const d = imagePred.drag;
  imagePred.drag = null;
  if (!d) return;
  d.end = imagePoint(e);
  if (Math.hypot(e.clientX - d.css[0], e.clientY - d.css[1]) >= DRAG_CSS_PX) d.moved = true;
  if (d.moved) {
    const box = [Math.min(d.start[0], d.end[0]), Math.min(d.start[1], d.end[1]), Math.max(d.start[0], d.end[0]),
                 Math.max(d.start[1], d.end[1])];
    enqueueImagePrediction(() => { imagePred.box = box; });
  } else {
    enqueueImagePrediction(() => { imagePred.points.push(d.start); imagePred.labels.push(d.negative ? 0 : 1); });
  }
}

function clearImageClicks() {
  Object.assign(imagePred, {points: [], labels: [], box: null, answer: null, picked: null});
  renderCandidates();
  drawImagePrediction();
  publishState();
}

async function uploadImage(file) {
  setStatus('Uploading ' + file.name + '…', 'uploading');
  const url = URL.createObjectURL(file);
  const image = new Image();
  try {
    await new Promise((resolve, reject) => {
      image.onload = resolve;
      image.onerror = () => reject(new Error(file.name + ' is not an image the browser can read'));
      image.src = url;
    });
  } finally {
    URL.revokeObjectURL(url);
  }
  const form = new FormData();
  form.append('file', file, file.name);
  const up = await (await api('/api/upload', {method: 'POST', body: form})).json();
  const [width, height] = [image.naturalWidth, image.naturalHeight];
  Object.assign(imagePred, {resource: up.resource_path, name: file.name, width, height, image});
  for (const c of [$('image'), imageCanvas()]) {
    c.width = width;
    c.height = height;
  }
  $('image').getContext('2d').drawImage(image, 0, 0);
  $('image-stage').hidden = false;
  $('image-clear').disabled = false;
  clearImageClicks();
  setStatus(file.name + ' (' + width + 'x' + height + '): click the object.', 'image-ready');
}

// The predictor's part of the page state (window.segmuxState().image_predictor).
function imagePredState() {
  const a = imagePred.answer;
  return {
    resource: imagePred.resource, width: imagePred.width, height: imagePred.height,
    points: imagePred.points, labels: imagePred.labels, box: imagePred.box,
    candidates: a ? a.scores.map((score, k) => ({score, area: candidateArea(k)})) : [],
    best: a ? a.best : null, picked: imagePred.picked, done: imagePred.done, last_request: imagePred.lastRequest,
    listed: [...document.querySelectorAll('#candidates li span.label')].map((s) => s.textContent),
  };
}

function wireImagePredictor() {
  const c = imageCanvas();
  c.addEventListener('pointerdown', onImagePointerDown);
  c.addEventListener('pointermove', onImagePointerMove);
  c.addEventListener('pointerup', onImagePointerUp);
  c.addEventListener('pointercancel', () => { imagePred.drag = null; drawImagePrediction(); });
  $('image-clear').addEventListener('click', clearImageClicks);
  $('image-upload').addEventListener('change', (e) => {
    const f = e.target.files[0];
    e.target.value = '';
    if (f) imagePred.queue = imagePred.queue.then(() => uploadImage(f)).catch(fail);
  });
}

document.addEventListener('DOMContentLoaded', wireImagePredictor);
