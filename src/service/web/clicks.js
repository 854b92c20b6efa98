// Points and boxes clicked on the shown frame (loaded before app.js, whose `app`, `$`, request() and
// drawing it uses). A click is a point for the selected object (shift-click or the negative toggle:
// a negative point), a drag is that object's box; "new object" takes an id above every id the session
// has shown or tracked. Each one is an official add_prompt with obj_id sent at once, in relative
// coordinates ([0, 1] of the frame, as the API takes them): the first on a frame for an object
// replaces its points there, the next ones append (clear_old_points=false). The answer is the frame's
// outputs with the refined mask; Propagate carries it through the video. "Exemplar boxes" sends dragged
// boxes to the detector instead (add_prompt without obj_id, with the prompt's text if any): it finds
// every object like the positive boxes and unlike the negative ones on that frame.
'use strict';

const DRAG_CSS_PX = 5;  // a press that moves less than this is a click

// Per frame and object: {frame, obj, points: [[x, y]] relative, labels: [1|0], box: [x, y, w, h] | null}.
const clicks = {
  marks: new Map(),  // 'frame:obj' -> marks the server accepted
  exemplars: new Map(),  // frame -> {boxes, labels}: the detector's box exemplars the server accepted
  pending: [],       // sent, not answered yet (drawn faded)
  drag: null,        // the press in progress
  queue: Promise.resolve(),  // clicks go to the server one after the other, in order
  maxId: -1,         // highest object id seen (outputs, tracked_obj_ids, clicks)
  selected: 'new',   // 'new', 'exemplar' or an object id
  done: 0,           // click / remove requests answered (tests wait on it)
  lastRequest: null, // the last request the page sent (tests and curious users: #state)
};

function clicksReset() {
  clicks.marks.clear();
  clicks.exemplars.clear();
  clicks.pending = [];
  clicks.drag = null;
  clicks.maxId = -1;
  clicks.selected = 'new';
}

function noteIds(ids) {
  for (const id of ids || []) clicks.maxId = Math.max(clicks.maxId, id);
}

// CSS pixels of a pointer event on the (CSS-scaled) overlay -> relative frame coordinates. The
// canvas's drawing buffer has the video's size, its box on screen whatever the layout gives it.
function relPoint(e) {
  const c = $('overlay');
  const r = c.getBoundingClientRect();
  return [(e.clientX - r.left - c.clientLeft) / c.clientWidth, (e.clientY - r.top - c.clientTop) / c.clientHeight];
}

const round6 = (v) => Math.round(v * 1e6) / 1e6;
const clamp01 = (v) => Math.min(1, Math.max(0, v));

function negativeMode(e) {
  return $('label-neg').checked !== !!e.shiftKey;  // shift inverts the toggle
}

function targetObject() {
  return clicks.selected === 'new' ? clicks.maxId + 1 : clicks.selected;
}

function onPointerDown(e) {
  if (e.button !== 0 || !app.session) return;
  if (app.streaming) {
    setStatus('A propagation is running: wait for it (or Cancel it) before clicking.', document.body.dataset.status);
    return;
  }
  e.preventDefault();
  try { $('overlay').setPointerCapture(e.pointerId); } catch (err) { /* synthetic events have no pointer */ }
  const p = relPoint(e);
  clicks.drag = {start: p, end: p, css: [e.clientX, e.clientY], moved: false, negative: negativeMode(e)};
}

function onPointerMove(e) {
  const d = clicks.drag;
  if (!d) return;
  d.end = relPoint(e);
  if (Math.hypot(e.clientX - d.css[0], e.clientY - d.css[1]) >= DRAG_CSS_PX) d.moved = true;
  if (d.moved) drawOverlay(app.current);
}

function onPointerUp(e) {
  const d = clicks.drag;
  clicks.drag = null;
  if (!d) return;
  d.end = relPoint(e);
  if (Math.hypot(e.clientX - d.css[0], e.clientY - d.css[1]) >= DRAG_CSS_PX) d.moved = true;
  const frame = app.current;
  if (d.moved) {
    const [x0, x1] = [clamp01(Math.min(d.start[0], d.end[0])), clamp01(Math.max(d.start[0], d.end[0]))];
    const [y0, y1] = [clamp01(Math.min(d.start[1], d.end[1])), clamp01(Math.max(d.start[1], d.end[1]))];
    const exemplar = clicks.selected === 'exemplar';
    enqueue({frame, box: [x0, y0, x1 - x0, y1 - y0], exemplar, label: exemplar && d.negative ? 0 : 1});
  } else if (clicks.selected === 'exemplar') {
    setStatus('Exemplar boxes: drag a box around an example (negative or shift: a counter-example).',
              document.body.dataset.status);
  } else {
    enqueue({frame, point: d.start, label: d.negative ? 0 : 1});
  }
  drawOverlay(app.current);
}

function enqueue(mark) {
  clicks.pending.push(mark);
  drawOverlay(app.current);
  clicks.queue = clicks.queue.then(() => sendMark(mark)).catch(fail).finally(() => {
    clicks.pending = clicks.pending.filter((m) => m !== mark);
    drawOverlay(app.current);
  });
}

// One click or box as an official add_prompt for the target object on the frame it was made on.
async function sendMark(mark) {
  if (mark.exemplar) return sendExemplar(mark);
  const obj = targetObject();
  const key = mark.frame + ':' + obj;
  const prior = clicks.marks.get(key);
  const body = {type: 'add_prompt', session_id: app.session.session_id, frame_index: mark.frame, obj_id: obj};
  let next;
  if (mark.box) {
    // A box goes first (the tracker places its corners before the clicks): resend the frame's clicks with it.
    next = {frame: mark.frame, obj, points: prior ? prior.points : [], labels: prior ? prior.labels : [],
            box: mark.box};
    // The object's box for the tracker: segmux's 'object_box' (officially 'bounding_boxes' always go to
    // the detector as exemplars, which the exemplar mode sends).
    body.object_box = mark.box.map(round6);
    if (next.points.length) {
      body.points = next.points.map((p) => p.map(round6));
      body.point_labels = next.labels;
    }
  } else {
    next = {frame: mark.frame, obj, points: (prior ? prior.points : []).concat([mark.point]),
            labels: (prior ? prior.labels : []).concat([mark.label]), box: prior ? prior.box : null};
    body.points = [mark.point.map(round6)];
    body.point_labels = [mark.label];
    if (prior) body.clear_old_points = false;
  }
  const what = mark.box ? 'box' : (mark.label ? 'positive point' : 'negative point');
  setStatus('Object ' + obj + ': ' + what + ' on frame ' + mark.frame + '…', 'clicking');
  clicks.lastRequest = body;
  let r;
  try {
    r = await request(body);
  } catch (e) {
    throw new Error('the server refused the ' + what + ' for object ' + obj + ' on frame ' + mark.frame + ': ' +
                    e.message);
  }
  clicks.marks.set(key, next);
  takeClickAnswer(r, obj);
  const shown = r.outputs.out_obj_ids.includes(obj);
  clicks.done++;
  setStatus('Object ' + obj + (shown ? ': mask on frame ' + r.frame_index + '. Click to refine, Propagate to track it.'
                                     : ': no mask on frame ' + r.frame_index + ' (the model finds no object at these ' +
                                       'points; add points or a box, or remove it).'), 'clicked');
}

// The frame's exemplar boxes so far and this one, with the prompt's text if any (else the detector's
// box-only prompt); the answer is the frame's detections, as a text prompt's.
async function sendExemplar(mark) {
  const prior = clicks.exemplars.get(mark.frame) || {boxes: [], labels: []};
  const next = {boxes: prior.boxes.concat([mark.box]), labels: prior.labels.concat([mark.label])};
  const text = $('prompt-text').value.trim();
  const body = {type: 'add_prompt', session_id: app.session.session_id, frame_index: mark.frame,
                bounding_boxes: next.boxes.map((b) => b.map(round6)), bounding_box_labels: next.labels};
  if (text) body.text = text;
  const what = (mark.label ? 'positive' : 'negative') + ' exemplar box';
  setStatus('Detecting with ' + next.boxes.length + ' exemplar box(es) on frame ' + mark.frame + '…', 'clicking');
  clicks.lastRequest = body;
  let r;
  try {
    r = await request(body);
  } catch (e) {
    throw new Error('the server refused the ' + what + ' on frame ' + mark.frame + ': ' + e.message);
  }
  clicks.exemplars.set(mark.frame, next);
  takePromptAnswer(r);
  clicks.done++;
  setStatus(r.outputs.out_obj_ids.length + ' object(s) on frame ' + r.frame_index + ' from ' + next.boxes.length +
            ' exemplar box(es)' + (text ? ' and "' + text + '"' : '') + '. Propagate to track them.', 'clicked');
}

// A text or exemplar prompt's answer: the frame's detections. The prompt restarted its concept, so
// listed objects the session no longer tracks and no frame shows are dropped from the list.
function takePromptAnswer(r) {
  noteIds(r.tracked_obj_ids);
  noteColors(r.obj_colors);
  takeOutputs(r.frame_index, r.outputs);
  const tracked = r.tracked_obj_ids || [];
  for (const id of [...app.objects.keys()])
    if (!tracked.includes(id) && ![...app.outputs.values()].some((o) => o.out_obj_ids.includes(id))) {
      app.objects.delete(id);
      forgetObjectMarks(id);
    }
  renderObjects();
  drawOverlay(app.current);
}

// The answer holds the frame's outputs (every object the server kept there, the clicked one refined):
// it replaces the frame's entries it names; the clicked object leaves the frame when it has no mask.
function takeClickAnswer(r, obj) {
  noteIds(r.tracked_obj_ids);
  noteColors(r.obj_colors);
  noteIds(r.outputs.out_obj_ids);
  noteIds([obj]);
  const got = r.outputs;
  const prev = app.outputs.get(r.frame_index);
  const keys = ['out_obj_ids', 'out_probs', 'out_boxes_xywh', 'out_binary_masks', 'out_prompts'];
  const merged = {};
  for (const k of keys) merged[k] = got[k].slice();
  if (prev)
    prev.out_obj_ids.forEach((id, i) => {
      if (id === obj || got.out_obj_ids.includes(id)) return;
      for (const k of keys) merged[k].push(prev[k][i]);
    });
  const order = merged.out_obj_ids.map((id, i) => [id, i]).sort((a, b) => a[0] - b[0]).map((p) => p[1]);
  for (const k of keys) merged[k] = order.map((i) => merged[k][i]);
  merged.frame_stats = got.frame_stats;
  takeOutputs(r.frame_index, merged);
  if (!app.objects.has(obj)) {
    const k = got.out_obj_ids.indexOf(obj);
    app.objects.set(obj, {prompt: k >= 0 ? got.out_prompts[k] : '', prob: k >= 0 ? got.out_probs[k] : null,
                          clicked: true});
  }
  clicks.selected = obj;
  renderObjects();
  drawOverlay(app.current);
}

function forgetObjectMarks(id) {
  for (const [key, m] of clicks.marks) if (m.obj === id) clicks.marks.delete(key);
  if (clicks.selected === id) clicks.selected = 'new';
}

// The object choice: "new object" and every listed object.
function renderObjectChoice() {
  const sel = $('click-object');
  sel.textContent = '';
  const add = (value, text) => {
    const o = document.createElement('option');
    o.value = value;
    o.textContent = text;
    sel.append(o);
  };
  add('new', 'new object (id ' + (clicks.maxId + 1) + ')');
  add('exemplar', 'exemplar boxes: find all like it');
  const ids = [...app.objects.keys()].sort((a, b) => a - b);
  ids.forEach((id) => add(String(id), 'object ' + id));
  if (typeof clicks.selected === 'number' && !ids.includes(clicks.selected)) clicks.selected = 'new';
  sel.value = String(clicks.selected);
  $('remove-selected').disabled = !app.session || typeof clicks.selected !== 'number' || !!app.streaming;
}

function drawPlus(ctx, x, y, arm, negative) {
  ctx.lineCap = 'square';
  for (const [width, colour] of [[ctx.lineWidth + 2, '#000'], [ctx.lineWidth, negative ? '#e53935' : '#00e676']]) {
    ctx.save();
    ctx.lineWidth = width;
    ctx.strokeStyle = colour;
    ctx.beginPath();
    ctx.moveTo(x - arm, y); ctx.lineTo(x + arm, y);
    if (!negative) { ctx.moveTo(x, y - arm); ctx.lineTo(x, y + arm); }
    ctx.stroke();
    ctx.restore();
  }
}

function drawBox(ctx, box, colour, w, h, dashed) {
  ctx.save();
  ctx.setLineDash(dashed ? [6, 4] : []);
  ctx.strokeStyle = '#000';
  ctx.lineWidth = Math.max(2, Math.round(h / 120)) + 2;
  ctx.strokeRect(box[0] * w, box[1] * h, box[2] * w, box[3] * h);
  ctx.strokeStyle = colour;
  ctx.lineWidth -= 2;
  ctx.strokeRect(box[0] * w, box[1] * h, box[2] * w, box[3] * h);
  ctx.restore();
}

// The frame's points (green +, red -) and boxes, accepted and pending, and the box being dragged.
function drawMarks(index) {
  const ov = $('overlay');
  const ctx = ov.getContext('2d');
  const w = ov.width, h = ov.height;
  const arm = Math.max(4, Math.round(Math.min(w, h) / 40));
  ctx.lineWidth = Math.max(2, Math.round(h / 120));
  const draw = (m, alpha) => {
    ctx.globalAlpha = alpha;
    if (m.box) drawBox(ctx, m.box, m.obj !== undefined ? color(m.obj) : '#fff', w, h, !!m.exemplar);
    (m.points || []).forEach((p, i) => drawPlus(ctx, p[0] * w, p[1] * h, arm, m.labels[i] === 0));
    if (m.point) drawPlus(ctx, m.point[0] * w, m.point[1] * h, arm, m.label === 0);
    ctx.globalAlpha = 1;
  };
  for (const m of clicks.marks.values()) if (m.frame === index) draw(m, 1);
  const ex = clicks.exemplars.get(index);
  if (ex) ex.boxes.forEach((b, i) => drawBox(ctx, b, ex.labels[i] ? '#00e676' : '#e53935', w, h, true));
  for (const m of clicks.pending) if (m.frame === index) draw(m, 0.5);
  const d = clicks.drag;
  if (d && d.moved) {
    const box = [Math.min(d.start[0], d.end[0]), Math.min(d.start[1], d.end[1]), Math.abs(d.end[0] - d.start[0]),
                 Math.abs(d.end[1] - d.start[1])];
    drawBox(ctx, box, '#fff', w, h, true);
  }
}

// The marks of the shown frame in video pixels, for #state.
function marksState(index) {
  const s = app.session;
  const px = (p) => [Math.round(p[0] * s.width * 10) / 10, Math.round(p[1] * s.height * 10) / 10];
  return [...clicks.marks.values()].filter((m) => m.frame === index).map((m) => ({
    obj_id: m.obj, points_px: m.points.map(px), labels: m.labels,
    box_px: m.box ? [...px(m.box.slice(0, 2)), ...px(m.box.slice(2))] : null}));
}

function exemplarsState(index) {
  const s = app.session, ex = clicks.exemplars.get(index);
  const px = (b) => b.map((v, i) => Math.round(v * (i % 2 ? s.height : s.width) * 10) / 10);
  return ex ? ex.boxes.map((b, i) => ({box_px: px(b), label: ex.labels[i]})) : [];
}

function wireClicks() {
  const ov = $('overlay');
  ov.addEventListener('pointerdown', onPointerDown);
  ov.addEventListener('pointermove', onPointerMove);
  ov.addEventListener('pointerup', onPointerUp);
  ov.addEventListener('pointercancel', () => { clicks.drag = null; drawOverlay(app.current); });
  $('click-object').addEventListener('change', (e) => {
    const v = e.target.value;
    clicks.selected = v === 'new' || v === 'exemplar' ? v : Number(v);
    renderObjectChoice();
  });
  $('remove-selected').addEventListener('click', () => {
    if (clicks.selected !== 'new') removeObject(clicks.selected).catch(fail);
  });
}
