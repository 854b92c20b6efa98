"""Clicks on the page of `segmux serve` as a person makes them (test_browser.py drives the browser):
real mouse events through DevTools (Input.dispatchMouseEvent) on the CSS-scaled canvas, then the
request the page sent (window.segmuxState().last_request), the answer it took (ids, object list) and
the marks it drew (overlay pixels: green +, red -, the box in the object's colour).

The tiny fixture model's interactive head finds no object at any click (tests/fixtures/sam31-tiny-prompts
/README.md): a clicked object gets no mask, as the official code's; what is checked is the plumbing."""
import base64
import json
import os
import time

from serve_util import check, mask_pixels

PROMPTS_TRACE = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'fixtures', 'sam31-tiny-prompts',
                             'video', 'trace.json')
GREEN, RED = 'green', 'red'


def state(dt):
    return dt.eval('window.segmuxState()')


def wait_until(dt, pred, what, timeout=60, allow_error=False):
    """The page's state once pred(state) holds (bounded); a page error fails unless allowed."""
    deadline, s = time.time() + timeout, None
    while time.time() < deadline:
        s = state(dt)
        if pred(s):
            return s
        if s['status'] == 'error' and not allow_error:
            raise AssertionError('the page reports an error while waiting for %s: %s' % (what, s['error']))
        time.sleep(0.1)
    raise AssertionError('the page did not reach %s in %d s: %s' % (what, timeout, s))


def canvas_rect(dt):
    return dt.eval('(() => { const r = document.getElementById("overlay").getBoundingClientRect();'
                   ' return [r.left, r.top, r.width, r.height]; })()')


def to_css(dt, size, px, py):
    """Viewport CSS coordinates of video pixel (px, py) (its top-left corner, as the API's x/W, y/H)."""
    left, top, width, height = canvas_rect(dt)
    return left + px / size[0] * width, top + py / size[1] * height


def mouse(dt, kind, x, y, modifiers=0, pressed=False):
    dt.call('Input.dispatchMouseEvent', type=kind, x=x, y=y, button='left', buttons=1 if pressed else 0,
            clickCount=1, modifiers=modifiers)


def click(dt, size, px, py, shift=False):
    x, y = to_css(dt, size, px, py)
    mods = 8 if shift else 0
    mouse(dt, 'mouseMoved', x, y, mods)
    mouse(dt, 'mousePressed', x, y, mods, pressed=True)
    mouse(dt, 'mouseReleased', x, y, mods)


def drag(dt, size, a, b):
    (x0, y0), (x1, y1) = to_css(dt, size, *a), to_css(dt, size, *b)
    mouse(dt, 'mouseMoved', x0, y0)
    mouse(dt, 'mousePressed', x0, y0, pressed=True)
    for k in range(1, 6):
        mouse(dt, 'mouseMoved', x0 + (x1 - x0) * k / 5, y0 + (y1 - y0) * k / 5, pressed=True)
    mouse(dt, 'mouseReleased', x1, y1)


def pixel(dt, x, y):
    return dt.eval('Array.from(document.getElementById("overlay").getContext("2d").getImageData(%d, %d, 1, 1).data)'
                   % (x, y))


def check_mark(dt, x, y, colour, where):
    r, g, b, a = pixel(dt, x, y)
    ok = a > 200 and (g > 150 and r < 100 if colour == GREEN else r > 150 and g < 100)
    check(ok, '%s: the %s mark is not drawn at (%d, %d): rgba %s' % (where, colour, x, y, (r, g, b, a)))


def one_request(dt, before, where, allow_error=False):
    """Waits for the answer of the click just made: the page's answered count goes up."""
    s = wait_until(dt, lambda s: s['clicks_done'] > before['clicks_done'] and s['pending_marks'] == 0 and
                   s['status'] in ('clicked', 'removed'), where)
    return s


def expect_point(req, frame, obj, rel, label, first, where, size):
    check(req['type'] == 'add_prompt' and req['frame_index'] == frame and req['obj_id'] == obj,
          '%s: request %s' % (where, req))
    (x, y), = req['points']
    tol = 1.0 / min(size)  # a video pixel at most: the canvas is scaled, the mapping must be exact
    check(abs(x - rel[0]) <= tol and abs(y - rel[1]) <= tol, '%s: point %s, expected %s' % (where, req['points'], rel))
    check(req['point_labels'] == [label], '%s: labels %s' % (where, req['point_labels']))
    check(('clear_old_points' not in req) == first and req.get('clear_old_points', False) is False,
          '%s: clear_old_points in %s (first click on the frame: %s)' % (where, req, first))


def inner_pixel(rle_counts, height):
    """A pixel of the mask nearest to its centroid (as the official clicks were chosen)."""
    on = mask_pixels(rle_counts)
    pts = [(i // height, i % height) for i in on]
    cx, cy = sum(p[0] for p in pts) / len(pts), sum(p[1] for p in pts) / len(pts)
    return min(pts, key=lambda p: (p[0] - cx) ** 2 + (p[1] - cy) ** 2)


def refine_and_errors(dt, srv, trace, after):
    """After the autorun (text, propagate, Remove): a click refines a tracked object on the shown frame;
    an object removed meanwhile by another client and a point outside the frame get the server's
    error shown on the page, which stays usable."""
    size = (dt.eval('document.getElementById("overlay").width'), dt.eval('document.getElementById("overlay").height'))
    width = canvas_rect(dt)[2]
    check(abs(width - size[0]) > 1, 'the canvas is not scaled by CSS (%s vs %s): the mapping is not exercised' %
          (width, size))
    frame = after['current_frame']
    ref = {f['frame_index']: f for f in trace['outputs']}[frame]
    obj = after['current_ids'][0]
    px, py = inner_pixel(ref['masks_rle'][ref['obj_ids'].index(obj)]['counts'], size[1])
    dt.eval('(() => { const s = document.getElementById("click-object"); s.value = "%d";'
            ' s.dispatchEvent(new Event("change")); })()' % obj)
    check(state(dt)['selected_object'] == obj, 'selecting object %d' % obj)
    before = state(dt)
    click(dt, size, px, py)
    s = one_request(dt, before, 'a click on object %d' % obj)
    expect_point(s['last_request'], frame, obj, (px / size[0], py / size[1]), 1, True, 'refinement', size)
    # The tiny model finds nothing at the click: the object leaves this frame (as officially), the others stay.
    want = [i for i in after['current_ids'] if i != obj]
    check(s['current_ids'] == want, 'frame %d after the click: ids %s, expected %s' % (frame, s['current_ids'], want))
    check(obj in s['objects'], 'the clicked object is still listed: %s' % s['objects'])
    check(s['marks'] == [{'obj_id': obj, 'points_px': [[float(px), float(py)]], 'labels': [1], 'box_px': None}],
          'marks %s' % s['marks'])
    check_mark(dt, px, py, GREEN, 'refinement')

    # Another client removes an object; the page's Remove then gets the server's 404, shown on the page.
    other = [i for i in s['objects'] if i != obj][-1]
    srv.request({'type': 'remove_object', 'session_id': s['session_id'], 'obj_id': other})
    dt.eval('document.querySelector(\'#objects li[data-obj-id="%d"] button.remove\').click()' % other)
    e = wait_until(dt, lambda s: s['status'] == 'error', 'the error of a Remove', allow_error=True)
    shown = dt.eval('document.getElementById("status").textContent')
    check('no object %d' % other in shown and shown.startswith('Error:'), 'the error shown: %r' % shown)
    check(e['last_request'] == {'type': 'remove_object', 'session_id': s['session_id'], 'obj_id': other},
          'remove request %s' % e['last_request'])

    # A point outside the frame (a synthetic event: the mouse cannot make one) gets the server's 400.
    dt.eval('''(() => { const c = document.getElementById("overlay"), r = c.getBoundingClientRect();
        const o = {clientX: r.right + r.width * 0.2, clientY: r.top + r.height / 2, button: 0, bubbles: true};
        c.dispatchEvent(new PointerEvent("pointerdown", o)); c.dispatchEvent(new PointerEvent("pointerup", o)); })()''')
    e = wait_until(dt, lambda s: s['status'] == 'error' and '[0, 1]' in (s['error'] or ''), 'the error of a point '
                   'outside the frame', allow_error=True)
    shown = dt.eval('document.getElementById("status").textContent')
    check('refused the positive point for object %d' % obj in shown, 'the error shown: %r' % shown)
    check(e['marks'] == s['marks'], 'a refused point is not drawn: %s' % e['marks'])

    # Propagate after the click (the official partial propagation): the page usable again, every frame.
    dt.eval('document.getElementById("propagate").click()')
    p = wait_until(dt, lambda s: s['status'] == 'done', 'the propagation after the click', 120)
    check(p['error'] is None and p['frames_with_outputs'] == p['num_frames'] and obj in p['objects'] and
          p['last_request']['type'] == 'propagate_in_video', 'after Propagate: %s' % p)
    print('browser clicks: refined object %d on frame %d at (%d, %d); errors shown: %r' % (obj, frame, px, py, shown))


def open_video(dt, srv, name):
    dt.call('Page.navigate', url=srv.url + '/')
    deadline, ready = time.time() + 30, False
    while time.time() < deadline:
        ready = dt.eval('!!window.segmuxState && [...document.querySelectorAll("#video-list option")]'
                        '.some(o => o.value === "%s")' % name)
        if ready:
            break
        time.sleep(0.1)
    check(ready, 'the video list has no %s' % name)
    dt.eval('(() => { document.getElementById("video-list").value = "%s";'
            ' document.getElementById("open-video").click(); })()' % name)
    return wait_until(dt, lambda s: s['status'] == 'open', 'the session', 60)


def clicks_only(dt, srv, screenshot, small=None):
    """A session started from clicks alone, as the official tracker-only case of sam31-tiny-prompts."""
    with open(PROMPTS_TRACE) as f:
        requests = json.load(f)['requests']
    one = next(r for r in requests if r.get('case') == 'new_obj_f000_1click')
    three = next(r for r in requests if r.get('case') == 'new_obj_f000_3clicks')
    box = next(r for r in requests if r.get('case') == 'new_obj_f000_box')
    s = open_video(dt, srv, 'frames')
    size = (s['width'], s['height'])
    check(s['current_frame'] == 0 and s['objects'] == [] and s['new_obj_id'] == 0, 'fresh session: %s' % s)

    # 1. A click with "new object" selected creates object 0 (official: no mask with these weights).
    (px, py), = one['points_px']
    click(dt, size, px, py)
    s = one_request(dt, s, 'the first click')
    expect_point(s['last_request'], 0, 0, one['points'][0], 1, True, 'first click', size)
    check(s['current_ids'] == one['outputs']['obj_ids'], 'ids after the first click %s, official %s' %
          (s['current_ids'], one['outputs']['obj_ids']))
    check(s['objects'] == [0] and s['selected_object'] == 0 and s['new_obj_id'] == 1, 'after the first click: %s' % s)
    rows = dt.eval('[...document.querySelectorAll("#objects li")].map(li => li.textContent)')
    check(len(rows) == 1 and rows[0].startswith('id 0') and 'points' in rows[0], 'object list %s' % rows)
    check_mark(dt, px, py, GREEN, 'first click')

    # 2. Shift-click: a negative point, appended (clear_old_points false).
    (qx, qy) = three['points_px'][2]
    click(dt, size, qx, qy, shift=True)
    s = one_request(dt, s, 'a shift-click')
    expect_point(s['last_request'], 0, 0, three['points'][2], 0, False, 'shift-click', size)
    check_mark(dt, qx, qy, RED, 'shift-click')
    check_mark(dt, px, py, GREEN, 'the first point after the second')

    # 3. The negative toggle: a plain click is negative, a shift-click positive.
    dt.eval('document.getElementById("label-neg").click()')
    (rx, ry) = three['points_px'][1]
    click(dt, size, rx, ry)
    s = one_request(dt, s, 'a click in negative mode')
    expect_point(s['last_request'], 0, 0, three['points'][1], 0, False, 'negative mode', size)
    check_mark(dt, rx, ry, RED, 'negative mode')
    click(dt, size, 160, 120, shift=True)
    s = one_request(dt, s, 'a shift-click in negative mode')
    expect_point(s['last_request'], 0, 0, (0.5, 0.5), 1, False, 'shift in negative mode', size)
    check_mark(dt, 160, 120, GREEN, 'shift in negative mode')
    dt.eval('document.getElementById("label-pos").click()')

    # 4. A drag: the object's box, sent with the frame's points (the box goes first, old points replaced).
    (bx0, by0), (bx1, by1) = box['points_px']
    drag(dt, size, (bx0, by0), (bx1, by1))
    s = one_request(dt, s, 'a dragged box')
    req = s['last_request']
    want_box = [bx0 / size[0], by0 / size[1], (bx1 - bx0) / size[0], (by1 - by0) / size[1]]
    check(req['obj_id'] == 0 and req['frame_index'] == 0 and 'bounding_boxes' not in req and
          all(abs(a - b) <= 1.0 / min(size) for a, b in zip(req['object_box'], want_box)),
          'box request %s, expected box %s' % (req, want_box))
    check(req['point_labels'] == [1, 0, 0, 1] and len(req['points']) == 4 and 'clear_old_points' not in req,
          'the box request resends the frame points: %s' % req)
    check(len(s['marks']) == 1 and s['marks'][0]['box_px'] is not None and len(s['marks'][0]['labels']) == 4,
          'marks after the box %s' % s['marks'])
    r, g, b, a = pixel(dt, (bx0 + bx1) // 2, by0)
    c = s['object_colors']['0']  # the server's colour of id 0, the CLI's (page_checks.colors_match_cli)
    check(a > 200 and all(abs(x - int(c[k:k + 2], 16)) <= 30 for x, k in zip((r, g, b), (1, 3, 5))),
          'the box edge is not drawn in object 0\'s colour %s: %s' % (c, [r, g, b, a]))
    shot = dt.call('Page.captureScreenshot', format='png')
    with open(screenshot, 'wb') as f:
        f.write(base64.b64decode(shot['data']))
    if small:  # docs/serve-clicks.png
        shot = dt.call('Page.captureScreenshot', format='png',
                       clip={'x': 0, 'y': 0, 'width': 1100, 'height': 560, 'scale': 0.6})
        with open(small, 'wb') as f:
            f.write(base64.b64decode(shot['data']))

    # 5. Propagate: the whole video, the clicked object still listed.
    dt.eval('document.getElementById("propagate").click()')
    s = wait_until(dt, lambda s: s['status'] == 'done', 'the propagation', 120)
    check(s['frames_with_outputs'] == s['num_frames'] and s['last_request']['type'] == 'propagate_in_video' and
          0 in s['objects'], 'after Propagate: %s' % s)

    # 6. Remove object (the selected one): remove_object, its points gone from the frame.
    check(s['selected_object'] == 0, 'selected %s' % s['selected_object'])
    dt.eval('document.getElementById("remove-selected").click()')
    s = one_request(dt, s, 'Remove object')
    check(s['last_request'] == {'type': 'remove_object', 'session_id': s['session_id'], 'obj_id': 0},
          'remove request %s' % s['last_request'])
    check(s['objects'] == [] and s['marks'] == [] and s['selected_object'] == 'new' and s['new_obj_id'] == 1,
          'after Remove object: %s' % s)
    check(pixel(dt, px, py)[3] == 0, 'a removed object\'s point is still drawn')
    print('browser clicks: a session from clicks alone: 4 points, a box, propagated over %d frames, removed; '
          'screenshot %s' % (s['num_frames'], screenshot))
    exemplar_boxes(dt, s, size)


def exemplar_boxes(dt, s, size):
    """Reset, then "exemplar boxes": dragged boxes go to the detector (no obj_id, no text typed), as the
    official box_pos / box_pos_neg cases of sam31-tiny-prompts/EXEMPLARS.md: same ids, mask areas."""
    with open(os.path.join(os.path.dirname(PROMPTS_TRACE), 'exemplar_cases.json')) as f:
        cases = {c['name']: c for c in json.load(f)['cases']}
    dt.eval('document.getElementById("reset").click()')
    s = wait_until(dt, lambda s: s['status'] == 'open' and s['objects'] == [], 'the reset')
    dt.eval('(() => { const s = document.getElementById("frame-slider"); s.value = 0;'
            ' s.dispatchEvent(new Event("input")); })()')
    s = wait_until(dt, lambda s: s['current_frame'] == 0, 'frame 0')
    dt.eval('(() => { const s = document.getElementById("click-object"); s.value = "exemplar";'
            ' s.dispatchEvent(new Event("change")); })()')
    check(state(dt)['selected_object'] == 'exemplar', 'selecting exemplar boxes')
    for name, shift in (('box_pos', False), ('box_pos_neg', True)):
        case = cases[name]
        x, y, w, h = case['boxes_xywh_px'][-1]
        drag_shift = 8 if shift else 0
        # From the bottom-right corner (the negative box starts at the frame's left edge).
        (x0, y0), (x1, y1) = to_css(dt, size, x + w, y + h), to_css(dt, size, x, y)
        mouse(dt, 'mouseMoved', x0, y0, drag_shift)
        mouse(dt, 'mousePressed', x0, y0, drag_shift, pressed=True)
        for k in range(1, 6):
            mouse(dt, 'mouseMoved', x0 + (x1 - x0) * k / 5, y0 + (y1 - y0) * k / 5, drag_shift, pressed=True)
        mouse(dt, 'mouseReleased', x1, y1, drag_shift)
        s = one_request(dt, s, 'exemplar box %s' % name)
        req, want = s['last_request'], case['request']
        check(req['type'] == 'add_prompt' and 'obj_id' not in req and 'text' not in req and
              req['frame_index'] == want['frame_index'] and req['bounding_box_labels'] == want['bounding_box_labels'] and
              all(abs(a - b) <= 1.0 / min(size) for got, ref in zip(req['bounding_boxes'], want['bounding_boxes'])
                  for a, b in zip(got, ref)), '%s: request %s, official %s' % (name, req, want))
        # The official cases run after reset_session; here the second box restarts the concept, whose new
        # objects take ids above the first's (ids stay unique in a session, docs/track.md): count only.
        want_ids = case['outputs']['obj_ids'] if not shift else [s['new_obj_id'] - 1]
        check(s['current_ids'] == want_ids and len(want_ids) == len(case['outputs']['obj_ids']),
              '%s: ids %s, official %s' % (name, s['current_ids'], case['outputs']['obj_ids']))
        areas = case['outputs']['mask_areas']
        check(all(abs(a - b) <= 0.03 * b + 5 for a, b in zip(s['current_areas'], areas)), '%s: mask areas %s, '
              'official %s' % (name, s['current_areas'], areas))
        check(s['exemplars'][-1]['label'] == (0 if shift else 1) and s['objects'] == want_ids,
              '%s: state %s' % (name, s))
    print('browser clicks: exemplar boxes (positive, then negative) find ids %s, areas %s (official %s)' %
          (s['current_ids'], s['current_areas'], areas))
