// segmux serve's page: opens a video (server-side or uploaded), sends official requests to
// /api/request, draws the streamed masks (COCO compressed RLE) and ids over the frames.
// Clicking points and drawing boxes on the frame: clicks.js; the sessions it opened: sessions.js.
// URL parameters drive it for automation: ?video=NAME[&prompt=TEXT]&autorun=1[&remove=ID][&token=T];
// the state (document.body.dataset.status and #state) tells a test where it is.
'use strict';

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
const app = {
  token: params.get('token') || '',
  session: null,   // {session_id, num_frames, width, height}
  frames: new Map(),   // frame index -> ImageBitmap
  outputs: new Map(),  // frame index -> official outputs
  objects: new Map(),  // obj id -> {prompt, prob}
  colors: new Map(),   // obj id -> '#rrggbb', the server's (the CLI overlay's colour of the id)
  progress: null,      // the last propagation's {done, total} (distinct frames, the video's frames)
  current: 0,
  streaming: null,     // AbortController of the running propagation
  error: null,
};

// Object colours come with the answers (obj_colors: the server's pipeline::id_color, which the CLI's
// overlay and masks_color/ use), so the page has no palette of its own to drift from them.
const UNKNOWN_COLOR = '#9e9e9e';
const color = (id) => app.colors.get(id) || UNKNOWN_COLOR;
function noteColors(colors) {
  for (const [id, c] of Object.entries(colors || {})) app.colors.set(Number(id), c);
}
// Label text on a colour: black or white by Rec. 601 luma, as the CLI overlay's labels.
function labelTextColor(c) {
  const [r, g, b] = [1, 3, 5].map((k) => parseInt(c.slice(k, k + 2), 16));
  return (299 * r + 587 * g + 114 * b) / 1000 > 150 ? '#000' : '#fff';
}

function setStatus(text, status) {
  $('status').textContent = text;
  if (status) document.body.dataset.status = status;
  if (status && status !== 'error') app.error = null;
  publishState();
}

function fail(err) {
  app.error = String(err.message || err);
  setStatus('Error: ' + app.error, 'error');
}

// The page's state for tests and tools (also in #state as JSON).
function state() {
  let overlayPixels = 0;
  const ov = $('overlay');
  if (ov.width && ov.height) {
    const d = ov.getContext('2d').getImageData(0, 0, ov.width, ov.height).data;
    for (let i = 3; i < d.length; i += 4) if (d[i] > 0) overlayPixels++;
  }
  return {
    status: document.body.dataset.status,
    session_id: app.session && app.session.session_id,
    num_frames: app.session ? app.session.num_frames : 0,
    width: app.session ? app.session.width : 0,
    height: app.session ? app.session.height : 0,
    frames_with_outputs: app.outputs.size,
    current_frame: app.current,
    objects: [...app.objects.keys()].sort((a, b) => a - b),
    current_ids: app.outputs.has(app.current) ? app.outputs.get(app.current).out_obj_ids : [],
    overlay_pixels: overlayPixels,
    error: app.error,
    selected_object: clicks.selected,
    new_obj_id: clicks.maxId + 1,
    marks: app.session ? marksState(app.current) : [],
    exemplars: app.session ? exemplarsState(app.current) : [],
    current_areas: app.outputs.has(app.current) ? app.outputs.get(app.current).out_binary_masks.map(maskArea) : [],
    pending_marks: clicks.pending.length,
    clicks_done: clicks.done,
    last_request: clicks.lastRequest,
    painted_pixels: typeof paintedArea === 'function' ? paintedArea() : 0,
    image_predictor: typeof imagePredState === 'function' ? imagePredState() : null,
    object_colors: Object.fromEntries([...app.objects.keys()].map((id) => [id, color(id)])),
    progress: app.progress,
    progress_text: $('progress-text').textContent,
    remembered_sessions: storedSessions().map((s) => s.id),
  };
}
window.segmuxState = state;
function publishState() { $('state').textContent = JSON.stringify(state()); }

function headers(extra) {
  const h = Object.assign({}, extra || {});
  if (app.token) h['Authorization'] = 'Bearer ' + app.token;
  return h;
}

async function api(path, options) {
  const res = await fetch(path, Object.assign({}, options, {headers: headers(options && options.headers)}));
  if (!res.ok) {
    let msg = res.status + ' ' + res.statusText;
    try { msg = (await res.json()).error || msg; } catch (e) { /* not JSON */ }
    throw Object.assign(new Error(msg), {status: res.status});
  }
  return res;
}

async function request(body) {
  const res = await api('/api/request', {method: 'POST', body: JSON.stringify(body),
                                         headers: {'Content-Type': 'application/json'}});
  return res.json();
}

// pycocotools' compressed counts string -> run lengths (column-major, starting with zeros).
function decodeCounts(s) {
  const counts = [];
  let p = 0;
  while (p < s.length) {
    let x = 0, k = 0, more = 1;
    while (more) {
      const c = s.charCodeAt(p) - 48;
      x |= (c & 0x1f) << (5 * k);
      more = c & 0x20;
      p++; k++;
      if (!more && (c & 0x10)) x |= -1 << (5 * k);
    }
    if (counts.length > 2) x += counts[counts.length - 2];
    counts.push(x);
  }
  return counts;
}

function maskArea(rle) {
  return decodeCounts(rle.counts).reduce((sum, n, i) => sum + (i % 2 ? n : 0), 0);
}

async function frameImage(index) {
  if (app.frames.has(index)) return app.frames.get(index);
  const res = await api('/api/frame?session_id=' + encodeURIComponent(app.session.session_id) + '&index=' + index);
  const bitmap = await createImageBitmap(await res.blob());
  app.frames.set(index, bitmap);
  return bitmap;
}

function drawOverlay(index) {
  const ov = $('overlay');
  const ctx = ov.getContext('2d');
  ctx.clearRect(0, 0, ov.width, ov.height);
  drawMasks(ctx, app.outputs.get(index), ov.width, ov.height);
  drawMarks(index);
}

function drawMasks(ctx, out, w, h) {
  if (!out) return;
  const img = ctx.createImageData(w, h);
  out.out_obj_ids.forEach((id, k) => {
    const rle = out.out_binary_masks[k];
    const c = color(id);
    const r = parseInt(c.slice(1, 3), 16), g = parseInt(c.slice(3, 5), 16), b = parseInt(c.slice(5, 7), 16);
    const runs = decodeCounts(rle.counts);
    let pos = 0;
    runs.forEach((n, i) => {
      if (i % 2 === 1) {
        for (let j = pos; j < pos + n; j++) {
          const x = Math.floor(j / h), y = j % h;  // column-major
          const o = 4 * (y * w + x);
          img.data[o] = r; img.data[o + 1] = g; img.data[o + 2] = b;
          img.data[o + 3] = 128;  // the CLI overlay's 50 % blend
        }
      }
      pos += n;
    });
  });
  ctx.putImageData(img, 0, 0);
  ctx.font = 'bold ' + Math.max(12, Math.round(h / 22)) + 'px system-ui, sans-serif';
  ctx.lineWidth = Math.max(1, Math.round(h / 240));
  out.out_obj_ids.forEach((id, k) => {
    const [bx, by, bw, bh] = out.out_boxes_xywh[k];
    ctx.strokeStyle = color(id);
    ctx.strokeRect(bx * w, by * h, bw * w, bh * h);
    const label = String(id);
    const tw = ctx.measureText(label).width + 6, th = Math.max(12, Math.round(h / 22)) + 4;
    ctx.fillStyle = color(id);
    ctx.fillRect(bx * w, Math.max(0, by * h - th), tw, th);
    ctx.fillStyle = labelTextColor(color(id));
    ctx.fillText(label, bx * w + 3, Math.max(th - 4, by * h - 4));
  });
}

async function show(index) {
  if (!app.session) return;
  index = Math.max(0, Math.min(app.session.num_frames - 1, index));
  app.current = index;
  $('frame-slider').value = index;
  $('frame-label').textContent = 'frame ' + index + ' / ' + (app.session.num_frames - 1);
  const bitmap = await frameImage(index);
  if (app.current !== index) return;  // scrubbed on meanwhile
  $('frame').getContext('2d').drawImage(bitmap, 0, 0);
  drawOverlay(index);
  publishState();
}

function takeOutputs(frameIndex, outputs) {
  app.outputs.set(frameIndex, outputs);
  noteIds(outputs.out_obj_ids);
  outputs.out_obj_ids.forEach((id, k) => {
    if (!app.objects.has(id)) app.objects.set(id, {prompt: outputs.out_prompts[k], prob: outputs.out_probs[k]});
  });
  renderObjects();
}

function renderObjects() {
  const ul = $('objects');
  ul.textContent = '';
  [...app.objects.keys()].sort((a, b) => a - b).forEach((id) => {
    const o = app.objects.get(id);
    const li = document.createElement('li');
    li.dataset.objId = id;
    const sw = document.createElement('span');
    sw.className = 'swatch';
    sw.style.background = color(id);
    const label = document.createElement('span');
    label.className = 'label';
    label.textContent = 'id ' + id + ' · ' + (o.prompt || (o.clicked ? 'points' : '')) +
                        (o.prob === null || o.prob === undefined ? '' : ' · ' + Number(o.prob).toFixed(2));
    label.title = 'select it for clicks';
    label.addEventListener('click', () => { clicks.selected = id; renderObjects(); });
    li.classList.toggle('selected', clicks.selected === id);
    const rm = document.createElement('button');
    rm.type = 'button';
    rm.textContent = 'Remove';
    rm.className = 'remove';
    rm.addEventListener('click', () => removeObject(id).catch(fail));
    li.append(sw, label, rm);
    ul.append(li);
  });
  renderObjectChoice();
}

function enable(open) {
  for (const id of ['add-prompt', 'propagate', 'reset', 'dl-tracks', 'dl-overlay', 'dl-frame', 'frame-slider',
                    'click-object', 'label-pos', 'label-neg'])
    $(id).disabled = !open || !!app.streaming;
  $('cancel').disabled = !app.streaming;
  document.body.classList.toggle('clickable', open && !app.streaming);
  renderObjectChoice();
}

async function openSession(resourcePath, label) {
  if (app.session) {
    const old = app.session.session_id;
    await request({type: 'close_session', session_id: old}).catch(() => {});
    forgetSession(old);
  }
  app.session = null;
  app.frames.clear(); app.outputs.clear(); app.objects.clear(); app.error = null; app.progress = null;
  showProgress();
  clicksReset();
  renderObjects();
  setStatus('Opening ' + label + '…', 'opening');
  let s;
  try {
    s = await request({type: 'start_session', resource_path: resourcePath});
  } catch (e) {
    if (e.status === 429) e.message += ' (Your sessions lists those this browser opened, with End)';
    throw e;
  }
  app.session = s;
  rememberSession(s.session_id, label);
  for (const c of [$('frame'), $('overlay')]) { c.width = s.width; c.height = s.height; }
  $('frame-slider').max = s.num_frames - 1;
  $('prompt-frame').max = s.num_frames - 1;
  $('video-info').textContent = label + ': ' + s.num_frames + ' frames, ' + s.width + '×' + s.height;
  enable(true);
  await show(0);
  setStatus('Session ' + s.session_id + ' open. Type a prompt.', 'open');
}

async function addPrompt() {
  const text = $('prompt-text').value.trim();
  if (!text) throw new Error('type a prompt first');
  const frame = Number($('prompt-frame').value) || 0;
  setStatus('Prompting "' + text + '" on frame ' + frame + '…', 'prompting');
  const body = {type: 'add_prompt', session_id: app.session.session_id, frame_index: frame, text: text};
  clicks.lastRequest = body;
  const r = await request(body);
  clicks.exemplars.delete(frame);  // a text prompt on the frame replaces its exemplar boxes
  takePromptAnswer(r);
  await show(r.frame_index);
  setStatus(r.outputs.out_obj_ids.length + ' object(s) on frame ' + r.frame_index + '. Propagate to track them.',
            'prompted');
}

async function propagate() {
  const ctrl = new AbortController();
  app.streaming = ctrl;
  enable(true);
  setStatus('Propagating…', 'streaming');
  let error = null;
  const seen = new Set();  // distinct frames: a "both" run delivers its start frame twice
  app.progress = {done: 0, total: app.session.num_frames};
  showProgress();
  const body = {type: 'propagate_in_video', session_id: app.session.session_id,
                propagation_direction: $('direction').value};
  clicks.lastRequest = body;
  try {
    const res = await api('/api/request', {
      method: 'POST', signal: ctrl.signal, headers: {'Content-Type': 'application/json'},
      body: JSON.stringify(body)});
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    for (;;) {
      const {value, done} = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, {stream: true});
      let nl;
      while ((nl = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        if (!line.trim()) continue;
        const msg = JSON.parse(line);
        if (msg.error) { error = msg.error; continue; }
        noteIds(msg.tracked_obj_ids);
        noteColors(msg.obj_colors);
        takeOutputs(msg.frame_index, msg.outputs);
        seen.add(msg.frame_index);
        app.progress = {done: seen.size, total: app.session.num_frames};
        showProgress();
        if ($('follow').checked) await show(msg.frame_index);
        else if (msg.frame_index === app.current) drawOverlay(app.current);
        setStatus('Propagating… ' + progressText() + ' (frame ' + msg.frame_index + ')', 'streaming');
      }
    }
  } catch (e) {
    if (e.name !== 'AbortError') error = e.message;
  } finally {
    app.streaming = null;
    enable(true);
    showProgress();
  }
  if (error) throw new Error(error);
  setStatus('Tracked ' + progressText() + ', ' + app.objects.size + ' object(s).', 'done');
}

// "frame k of N": the distinct frames the propagation delivered of the video's frames.
function progressText() {
  return app.progress ? app.progress.done + ' of ' + app.progress.total + ' frames' : '';
}

function showProgress() {
  const bar = $('progress');
  bar.hidden = !app.progress;
  if (app.progress) { bar.max = app.progress.total; bar.value = app.progress.done; }
  $('progress-text').textContent = app.progress ? progressText() + (app.streaming ? '' : ' tracked') : '';
}

async function cancel() {
  if (!app.session) return;
  await request({type: 'cancel_propagation', session_id: app.session.session_id});
  setStatus('Cancelled.', 'cancelled');
}

async function removeObject(id) {
  const body = {type: 'remove_object', session_id: app.session.session_id, obj_id: id};
  clicks.lastRequest = body;
  try {
    await request(body);
  } catch (e) {
    throw new Error('the server refused to remove object ' + id + ': ' + e.message);
  }
  clicks.done++;
  forgetObjectMarks(id);
  app.objects.delete(id);
  for (const out of app.outputs.values()) {
    const k = out.out_obj_ids.indexOf(id);
    if (k >= 0) for (const key of ['out_obj_ids', 'out_probs', 'out_boxes_xywh', 'out_binary_masks', 'out_prompts'])
      out[key].splice(k, 1);
  }
  renderObjects();
  drawOverlay(app.current);
  setStatus('Removed object ' + id + '.', 'removed');
}

async function reset() {
  await request({type: 'reset_session', session_id: app.session.session_id});
  app.outputs.clear(); app.objects.clear();
  clicksReset();
  renderObjects();
  drawOverlay(app.current);
  setStatus('Session reset.', 'open');
}

async function download(what) {
  const res = await api('/api/export?session_id=' + encodeURIComponent(app.session.session_id) + '&what=' + what);
  const blob = await res.blob();
  const name = (res.headers.get('Content-Disposition') || '').match(/filename="([^"]+)"/);
  save(blob, name ? name[1] : what);
}

function save(blob, name) {
  const a = document.createElement('a');
  a.href = URL.createObjectURL(blob);
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10000);
}

function downloadFrame() {
  const c = document.createElement('canvas');
  c.width = $('frame').width; c.height = $('frame').height;
  const ctx = c.getContext('2d');
  ctx.drawImage($('frame'), 0, 0);
  ctx.drawImage($('overlay'), 0, 0);
  c.toBlob((b) => save(b, 'frame_' + String(app.current).padStart(5, '0') + '.png'));
}

async function upload(file) {
  setStatus('Uploading ' + file.name + '…', 'uploading');
  const form = new FormData();
  form.append('file', file, file.name);
  try {
    const up = await (await api('/api/upload', {method: 'POST', body: form})).json();
    await openSession(up.resource_path, file.name);
  } catch (e) {
    throw new Error(file.name + ': ' + e.message);
  }
}

async function loadVideoList() {
  const list = await (await api('/api/videos')).json();
  const sel = $('video-list');
  for (const v of list.videos) {
    const o = document.createElement('option');
    o.value = o.textContent = v;
    sel.append(o);
  }
}

function wire() {
  const on = (id, ev, fn) => $(id).addEventListener(ev, (e) => Promise.resolve(fn(e)).catch(fail));
  on('open-video', 'click', () => $('video-list').value && openSession($('video-list').value, $('video-list').value));
  on('upload', 'change', (e) => e.target.files[0] && upload(e.target.files[0]));
  on('add-prompt', 'click', addPrompt);
  on('prompt-text', 'keydown', (e) => e.key === 'Enter' && !$('add-prompt').disabled && addPrompt());
  on('propagate', 'click', propagate);
  on('cancel', 'click', cancel);
  on('reset', 'click', reset);
  on('frame-slider', 'input', (e) => show(Number(e.target.value)));
  on('prev', 'click', () => show(app.current - 1));
  on('next', 'click', () => show(app.current + 1));
  on('dl-tracks', 'click', () => download('tracks'));
  on('dl-overlay', 'click', () => download('overlay'));
  on('dl-frame', 'click', downloadFrame);
  wireClicks();
  wireSessions();
  window.addEventListener('keydown', (e) => {
    if (e.target.tagName === 'SELECT' || (e.target.tagName === 'INPUT' && e.target.type !== 'range')) return;
    if (e.key === 'ArrowLeft') show(app.current - 1).catch(fail);
    if (e.key === 'ArrowRight') show(app.current + 1).catch(fail);
  });
}

async function autorun() {
  await closeLeftoverSession();
  await loadVideoList();
  $('video-list').value = params.get('video');
  await openSession(params.get('video'), params.get('video'));
  $('prompt-text').value = params.get('prompt') || '';
  if (!$('prompt-text').value) return setStatus('Autorun done (video open).', 'autorun-done');
  await addPrompt();
  await propagate();
  if (params.get('remove') !== null) await removeObject(Number(params.get('remove')));
  await show(Number(params.get('show') || app.current));
  setStatus(document.body.dataset.status === 'removed' ? 'Autorun done (object removed).' : 'Autorun done.',
            'autorun-done');
}

wire();
if (params.get('autorun') === '1' && params.get('video')) autorun().catch(fail);
else closeLeftoverSession().then(loadVideoList).catch(fail);
publishState();
