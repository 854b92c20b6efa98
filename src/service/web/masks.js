// Mask prompts on the page (a segmux extension: official requests take no masks). Upload a PNG mask
// (black background, white object, any size: the server resizes it to the video as the official
// tracker does) or paint one on the shown frame; either goes to the selected object ("new object": a
// new id) on the shown frame as add_prompt with "object_mask" (COCO uncompressed RLE, column-major
// runs starting with 0s), answered like a click. Loaded before app.js (its `app`, `$`, request(),
// setStatus(), fail() and clicks.js's targetObject() / takeClickAnswer() are used at call time).
'use strict';

const maskPaint = {
  painting: false,  // a stroke in progress
  session: null,    // the session the painted pixels belong to
  last: null,       // the stroke's previous point (video pixels)
};

function paintCanvas() { return document.getElementById('paint'); }

// The paint layer has the video's size and belongs to one session: anything else starts it blank.
function paintLayer() {
  const c = paintCanvas();
  const s = app.session;
  if (!s) return null;
  if (maskPaint.session !== s.session_id || c.width !== s.width || c.height !== s.height) {
    c.width = s.width;
    c.height = s.height;
    maskPaint.session = s.session_id;
  }
  return c;
}

function clearPaint() {
  const c = paintLayer();
  if (c) c.getContext('2d').clearRect(0, 0, c.width, c.height);
  publishState();
}

// COCO uncompressed RLE of a binary mask (row-major 0/1 bytes, width x height): runs over the
// column-major flattening, starting with a run of 0s.
function rleOf(bits, width, height) {
  const counts = [];
  let cur = 0, run = 0;
  for (let x = 0; x < width; x++)
    for (let y = 0; y < height; y++) {
      const v = bits[y * width + x];
      if (v !== cur) { counts.push(run); cur = v; run = 0; }
      run++;
    }
  counts.push(run);
  return {size: [height, width], counts};
}

function paintedBits() {
  const c = paintLayer();
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  const bits = new Uint8Array(c.width * c.height);
  for (let i = 0; i < bits.length; i++) bits[i] = d[4 * i + 3] > 0 ? 1 : 0;
  return bits;
}

function paintedArea() {
  if (!app.session || maskPaint.session !== app.session.session_id) return 0;
  return paintedBits().reduce((a, b) => a + b, 0);
}

// The pixels of an uploaded image as a binary mask; an error names the first pixel that is neither
// black nor white.
function bitsOfImage(img, name) {
  const c = document.createElement('canvas');
  c.width = img.naturalWidth;
  c.height = img.naturalHeight;
  const ctx = c.getContext('2d');
  ctx.drawImage(img, 0, 0);
  const d = ctx.getImageData(0, 0, c.width, c.height).data;
  const bits = new Uint8Array(c.width * c.height);
  for (let i = 0; i < bits.length; i++) {
    const [r, g, b] = [d[4 * i], d[4 * i + 1], d[4 * i + 2]];
    const white = r === g && g === b && (r === 255 || r === 1);
    if (!white && (r || g || b))
      throw new Error(name + ' is not a binary mask: pixel (' + (i % c.width) + ', ' + Math.floor(i / c.width) +
                      ') is (' + r + ', ' + g + ', ' + b + '); use black for the background, white for the object');
    bits[i] = white ? 1 : 0;
  }
  return {bits, width: c.width, height: c.height};
}

async function sendMask(bits, width, height, what) {
  if (!app.session) throw new Error('open a video first');
  if (app.streaming) throw new Error('a propagation is running: wait for it (or Cancel it)');
  if (!bits.some((v) => v)) throw new Error(what + ' is empty: it has no object pixel');
  const obj = targetObject();
  if (typeof obj !== 'number') throw new Error('choose "new object" or an object for the mask');
  const frame = app.current;
  const body = {type: 'add_prompt', session_id: app.session.session_id, frame_index: frame, obj_id: obj,
                object_mask: rleOf(bits, width, height)};
  setStatus('Object ' + obj + ': ' + what + ' on frame ' + frame + '…', 'clicking');
  clicks.lastRequest = body;
  let r;
  try {
    r = await request(body);
  } catch (e) {
    throw new Error('the server refused the ' + what + ' for object ' + obj + ' on frame ' + frame + ': ' + e.message);
  }
  takeClickAnswer(r, obj);
  clicks.done++;
  setStatus('Object ' + obj + ': mask on frame ' + r.frame_index + '. Propagate to track it.', 'clicked');
}

async function uploadMask(file) {
  const url = URL.createObjectURL(file);
  try {
    const img = new Image();
    await new Promise((resolve, reject) => {
      img.onload = resolve;
      img.onerror = () => reject(new Error(file.name + ' is not an image the browser can read'));
      img.src = url;
    });
    const m = bitsOfImage(img, file.name);
    await sendMask(m.bits, m.width, m.height, 'mask ' + file.name);
  } finally {
    URL.revokeObjectURL(url);
  }
}

function paintAt(e) {
  const c = paintLayer();
  if (!c) return;
  const r = c.getBoundingClientRect();
  const p = [(e.clientX - r.left) * c.width / r.width, (e.clientY - r.top) * c.height / r.height];
  const ctx = c.getContext('2d');
  const size = Number(document.getElementById('brush').value) || 12;
  ctx.globalCompositeOperation = document.getElementById('erase').checked ? 'destination-out' : 'source-over';
  ctx.strokeStyle = ctx.fillStyle = 'rgba(255, 255, 255, 0.55)';
  ctx.lineWidth = size;
  ctx.lineCap = 'round';
  ctx.beginPath();
  const from = maskPaint.last || p;
  ctx.moveTo(from[0], from[1]);
  ctx.lineTo(p[0], p[1]);
  ctx.stroke();
  maskPaint.last = p;
}

function wireMasks() {
  const c = paintCanvas();
  document.getElementById('paint-mode').addEventListener('change', (e) => {
    document.body.classList.toggle('painting', e.target.checked);
    if (e.target.checked) paintLayer();
  });
  c.addEventListener('pointerdown', (e) => {
    if (e.button !== 0 || !app.session) return;
    e.preventDefault();
    try { c.setPointerCapture(e.pointerId); } catch (err) { /* synthetic events have no pointer */ }
    maskPaint.painting = true;
    maskPaint.last = null;
    paintAt(e);
  });
  c.addEventListener('pointermove', (e) => { if (maskPaint.painting) paintAt(e); });
  const end = () => { maskPaint.painting = false; maskPaint.last = null; publishState(); };
  c.addEventListener('pointerup', end);
  c.addEventListener('pointercancel', end);
  document.getElementById('clear-paint').addEventListener('click', clearPaint);
  document.getElementById('send-paint').addEventListener('click', () => {
    const l = paintLayer();
    if (!l) return fail(new Error('open a video first'));
    clicks.queue = clicks.queue.then(() => sendMask(paintedBits(), l.width, l.height, 'painted mask'))
      .then(clearPaint).catch(fail);
  });
  document.getElementById('mask-upload').addEventListener('change', (e) => {
    const f = e.target.files[0];
    e.target.value = '';
    if (f) clicks.queue = clicks.queue.then(() => uploadMask(f)).catch(fail);
  });
}

document.addEventListener('DOMContentLoaded', wireMasks);
