"""What a user of the page of `segmux serve` meets beside the flow (test_browser.py runs these against its
server and browser): unknown routes answer JSON, frames travel as PNG (the video's pixels exactly), errors
name the user's upload and never a server-side path, object colours are the CLI overlay's, propagation
progress shows a total, and the page closes its session when it is left and lists (and can end) the
sessions it opened. Python 3 standard library only (a small PNG reader below)."""
import json
import os
import struct
import subprocess
import time
import urllib.request
import zlib

from serve_util import SEGMUX, TINY, CACHE, check
from browser_clicks import inner_pixel

OCTETS = {'Content-Type': 'application/octet-stream'}


def png_chunks(data):
    check(data[:8] == b'\x89PNG\r\n\x1a\n', 'not a PNG: %r' % data[:8])
    pos, chunks = 8, []
    while pos < len(data):
        n, kind = struct.unpack('>I4s', data[pos:pos + 8])
        chunks.append((kind, data[pos + 8:pos + 8 + n]))
        pos += 12 + n
    return chunks


def png_rgb(data):
    """(width, height, RGB bytes) of an 8-bit RGB, non-interlaced PNG."""
    chunks = png_chunks(data)
    w, h, depth, ctype, _, _, interlace = struct.unpack('>IIBBBBB', chunks[0][1])
    check((depth, ctype, interlace) == (8, 2, 0),
          'PNG: depth %d, colour type %d, interlace %d' % (depth, ctype, interlace))
    raw = zlib.decompress(b''.join(c for k, c in chunks if k == b'IDAT'))
    stride, out, prev = w * 3, bytearray(), bytearray(w * 3)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - 3] if i >= 3 else 0
            b, c = prev[i], prev[i - 3] if i >= 3 else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        out += line
        prev = line
    return w, h, bytes(out)


def png_palette(data):
    plte = next(c for k, c in png_chunks(data) if k == b'PLTE')
    return ['#%02x%02x%02x' % tuple(plte[i:i + 3]) for i in range(0, len(plte), 3)]


def routes_and_frames(srv):
    """Unknown routes get a JSON 404; a frame is a PNG with the video's pixels, exactly."""
    for method, path in (('GET', '/nope'), ('POST', '/api/nothing'), ('GET', '/api'), ('DELETE', '/api/request')):
        status, j, hdrs = srv.call(method, path, b'{}' if method == 'POST' else None)
        check(status == 404 and isinstance(j, dict) and j.get('status') == 404 and
              ('no route %s %s' % (method, path)) in j.get('error', ''),
              '%s %s: %s %r (%s)' % (method, path, status, j, hdrs.get('Content-Type')))
    status, j, _ = srv.call('GET', '/static/nope.js')
    check(status == 404 and "no file 'nope.js'" in j['error'], 'a missing page file: %s %s' % (status, j))
    sid = srv.request({'type': 'start_session', 'resource_path': 'frames'})['session_id']
    try:
        status, png, hdrs = srv.call('GET', '/api/frame?session_id=%s&index=3' % sid)
        check(status == 200 and hdrs.get('Content-Type') == 'image/png',
              'frame: %s %s' % (status, hdrs.get('Content-Type')))
        with open(os.path.join(TINY, 'video/frames/00003.png'), 'rb') as f:
            want = png_rgb(f.read())
        got = png_rgb(png)
        check(got == want, 'frame 3 as served (%dx%d) differs from the video\'s frame' % got[:2])
        check(len(png) < got[0] * got[1] * 3, 'the frame PNG is not compressed: %d bytes' % len(png))
    finally:
        srv.request({'type': 'close_session', 'session_id': sid})
    print('page api: unknown routes answer a JSON 404; frames are PNG (%d bytes for %dx%d), pixels exact' %
          (len(png), got[0], got[1]))


def errors_hide_server_paths(srv, allow):
    """A broken upload and a broken frame of the allowed folder: the error names the user's file, never a
    server-side path (the upload folder, the allowed folder's location)."""
    status, up, _ = srv.call('POST', '/api/upload?filename=holiday%20clip.mp4', os.urandom(4096), OCTETS)
    check(status == 200, 'upload: %s %s' % (status, up))
    status, j, _ = srv.call('POST', '/api/request', {'type': 'start_session', 'resource_path': up['resource_path']})
    check(status == 400 and 'holiday clip.mp4' in j['error'], 'a broken upload: %s %s' % (status, j))
    broken = os.path.join(allow, 'broken')
    os.makedirs(broken, exist_ok=True)
    for i in range(2):
        with open(os.path.join(broken, '%05d.png' % i), 'wb') as f:
            f.write(b'\x89PNG\r\n\x1a\n' + os.urandom(200))
    errors = [j['error']]
    status, j, _ = srv.call('POST', '/api/request', {'type': 'start_session', 'resource_path': 'broken'})
    if status == 200:  # the folder opens: the broken frame fails when it is read
        sid = j['session_id']
        status, j, _ = srv.call('GET', '/api/frame?session_id=%s&index=1' % sid)
        srv.request({'type': 'close_session', 'session_id': sid})
    check(status == 400 and ('broken/00000.png' in j['error'] or 'broken/00001.png' in j['error']),
          'a broken frame: %s %s' % (status, j))
    errors.append(j['error'])
    for e in errors:
        check('/tmp' not in e and 'segmux-serve-' not in e and allow not in e and os.path.realpath(allow) not in e,
              'a server-side path in the error %r' % e)
    print('page api: errors name the file: %s' % ' | '.join(errors))


def cli_colors(root, trace, frame):
    """{id: '#rrggbb'} of frame's objects as `segmux track --masks color` draws them (masks_color/ palette:
    entry k is the frame's k-th object by ascending id)."""
    out = os.path.join(root, 'track_colors')
    subprocess.run([SEGMUX, 'track', os.path.join(TINY, 'video/frames'), '--prompt', trace['prompt'], '--weights',
                    os.path.join(TINY, 'weights.safetensors'), '--config', os.path.join(TINY, 'config.json'), '--vocab',
                    os.path.join(TINY, 'tokenizer/bpe_simple_vocab_16e6.txt.gz'), '--cache-dir', CACHE, '--out', out,
                    '--overlay', 'none', '--masks', 'color', '-q'], check=True, timeout=600)
    with open(os.path.join(out, 'tracks.json')) as f:
        shown = next(fr for fr in json.load(f)['frames'] if fr['frame_index'] == frame)
    ids = sorted(o['id'] for o in shown['objects'])
    with open(os.path.join(out, 'masks_color', '%05d.png' % frame), 'rb') as f:
        palette = png_palette(f.read())
    return {str(i): palette[k + 1] for k, i in enumerate(ids)}


def colors_match_cli(dt, root, trace, state, frame):
    """The page's colour of every object on the frame is the CLI's, on the list and on the overlay."""
    want = cli_colors(root, trace, frame)
    check(set(want) <= set(state['object_colors']), 'page colours %s, CLI %s' % (state['object_colors'], want))
    for i, c in want.items():
        check(state['object_colors'][i] == c, 'object %s: page colour %s, CLI %s' % (i, state['object_colors'][i], c))
        swatch = dt.eval('getComputedStyle(document.querySelector(\'#objects li[data-obj-id="%s"] .swatch\'))'
                         '.backgroundColor' % i)
        check(swatch == 'rgb(%d, %d, %d)' % tuple(int(c[k:k + 2], 16) for k in (1, 3, 5)),
              'swatch %s: %s' % (i, swatch))
    # A mask pixel on the overlay canvas (inside, away from the box and label): the colour at the CLI's
    # 50 % blend (alpha 128).
    ref = {f['frame_index']: f for f in trace['outputs']}[frame]
    obj = ref['obj_ids'][0]
    x, y = inner_pixel(ref['masks_rle'][0]['counts'], state['height'])
    r, g, b, a = dt.eval('Array.from(document.getElementById("overlay").getContext("2d").getImageData(%d, %d, 1, 1)'
                         '.data)' % (x, y))
    c = want[str(obj)]
    rgb = [int(c[k:k + 2], 16) for k in (1, 3, 5)]
    check(abs(a - 128) <= 1 and all(abs(x - y) <= 2 for x, y in zip((r, g, b), rgb)),
          'overlay pixel of object %d: rgba %s, CLI colour %s' % (obj, (r, g, b, a), c))
    print('page: object colours are the CLI overlay\'s: %s' % want)


def progress_has_total(dt, state):
    n = state['num_frames']
    text = dt.eval('document.getElementById("progress-text").textContent')
    bar = dt.eval('[document.getElementById("progress").value, document.getElementById("progress").max,'
                  ' document.getElementById("progress").hidden]')
    check(state['progress'] == {'done': n, 'total': n} and text == '%d of %d frames tracked' % (n, n) and
          bar == [n, n, False], 'progress after the propagation: %s, %r, bar %s' % (state['progress'], text, bar))
    print('page: progress %r' % text)


def open_session_ids(srv):
    return srv.call('GET', '/metrics')[1]['sessions']


def wait_open(dt, what, old=(), timeout=60):
    """The page's state once its autorun has opened a session other than those in old."""
    deadline, s = time.time() + timeout, None
    while time.time() < deadline:
        try:
            s = dt.eval('window.segmuxState ? window.segmuxState() : null')
        except AssertionError:  # the document went away between the call and its answer
            s = None
        if s and s['status'] == 'autorun-done' and s['session_id'] and s['session_id'] not in old:
            return s
        check(not s or s['status'] != 'error', '%s: the page reports %s' % (what, s and s['error']))
        time.sleep(0.1)
    raise AssertionError('%s: no session in %d s: %s' % (what, timeout, s))


def wait_sessions(srv, n, what, timeout=20):
    deadline, have = time.time() + timeout, None
    while time.time() < deadline:
        have = open_session_ids(srv)
        if have == n:
            return
        time.sleep(0.1)
    raise AssertionError('%s: %s sessions open on the server, expected %d' % (what, have, n))


def reloads_and_sessions(dt, srv, devtools_port, new_devtools):
    """Reloading the page (more times than --max-sessions) leaves one session open: the page closes its
    own when left. A second tab's session shows in the first tab's list, whose End closes it. A server
    full of other clients' sessions: the refusal shown points to the list."""
    url = srv.url + '/?video=frames&autorun=1'
    dt.call('Page.navigate', url=url)
    first = wait_open(dt, 'the first load')
    base = open_session_ids(srv)
    seen = {first['session_id']}
    for k in range(5):
        dt.call('Page.reload')
        s = wait_open(dt, 'reload %d' % (k + 1), seen)
        seen.add(s['session_id'])
        wait_sessions(srv, base, 'after reload %d' % (k + 1))
    check(s['remembered_sessions'] == [s['session_id']], 'listed sessions after reloads: %s' % s['remembered_sessions'])
    # A goodbye lost (no pagehide request): the tab closes its leftover session when it loads again.
    dt.eval('window.removeEventListener("pagehide", closeOnLeave)')
    dt.call('Page.reload')
    s = wait_open(dt, 'a reload without the pagehide close', seen)
    seen.add(s['session_id'])
    wait_sessions(srv, base, 'after a reload whose pagehide close was lost')
    check(s['remembered_sessions'] == [s['session_id']], 'listed after the lost goodbye: %s' % s['remembered_sessions'])
    # A second tab: its session is listed in the first tab, which ends it.
    req = urllib.request.Request('http://127.0.0.1:%d/json/new?about:blank' % devtools_port, method='PUT')
    with urllib.request.urlopen(req, timeout=10) as r:
        tab = json.load(r)
    other = new_devtools(tab['webSocketDebuggerUrl'])
    try:
        other.call('Page.navigate', url=url)
        o = wait_open(other, 'the second tab')
        wait_sessions(srv, base + 1, 'with a second tab')
        deadline = time.time() + 10
        while time.time() < deadline and o['session_id'] not in dt.eval('window.segmuxState()')['remembered_sessions']:
            time.sleep(0.1)
        rows = dt.eval('[...document.querySelectorAll("#sessions li")]'
                       '.map(li => [li.dataset.sessionId, li.textContent])')
        check([r[0] for r in rows] == [s['session_id'], o['session_id']] and '(this page)' in rows[0][1],
              'the first tab lists %s' % rows)
        dt.eval('document.querySelector(\'#sessions li[data-session-id="%s"] button.end\').click()' % o['session_id'])
        wait_sessions(srv, base, 'after End in the first tab')
        deadline, listed = time.time() + 10, None
        while time.time() < deadline:
            listed = dt.eval('window.segmuxState()')['remembered_sessions']
            if listed == [s['session_id']]:
                break
            time.sleep(0.1)
        check(listed == [s['session_id']], 'listed after End: %s' % listed)
    finally:
        with urllib.request.urlopen('http://127.0.0.1:%d/json/close/%s' % (devtools_port, tab['id']), timeout=10):
            pass
    # The server full (sessions of other clients): the page's refusal points to the list.
    dt.eval('document.querySelector(\'#sessions li[data-session-id="%s"] button.end\').click()' % s['session_id'])
    wait_sessions(srv, base - 1, 'after End of the page\'s own session')
    limit = srv.call('GET', '/metrics')[1]['max_sessions']
    others = [srv.request({'type': 'start_session', 'resource_path': 'frames'})['session_id']
              for _ in range(limit - (base - 1))]
    try:
        dt.eval('(() => { document.getElementById("video-list").value = "frames";'
                ' document.getElementById("open-video").click(); })()')
        deadline, e = time.time() + 20, None
        while time.time() < deadline and not e:
            e = dt.eval('window.segmuxState()')['error']
            time.sleep(0.1)
        check(e and 'sessions are open' in e and 'Your sessions' in e, 'the page when the server is full: %r' % e)
    finally:
        for sid in others:
            srv.request({'type': 'close_session', 'session_id': sid})
    dt.call('Page.navigate', url=url)
    wait_open(dt, 'a load after the server was full')
    # Leaving the page (to another site) closes its session too.
    dt.call('Page.navigate', url='about:blank')
    wait_sessions(srv, base - 1, 'after leaving the page')
    print('page: %d loads, one session open at a time; a second tab\'s session ended from the first; a full '
          'server\'s refusal points to the list; leaving closes it' % len(seen))


def upload_error_on_page(dt, srv, root):
    """A broken file chosen in the page's upload field: the error shown names it, and no server path."""
    path = os.path.join(root, 'holiday clip.mp4')
    with open(path, 'wb') as f:
        f.write(os.urandom(4096))
    dt.call('Page.navigate', url=srv.url + '/')
    deadline = time.time() + 30
    while time.time() < deadline and not dt.eval('!!window.segmuxState'):
        time.sleep(0.1)
    doc = dt.call('DOM.getDocument')
    node = dt.call('DOM.querySelector', nodeId=doc['root']['nodeId'], selector='#upload')['nodeId']
    dt.call('DOM.setFileInputFiles', nodeId=node, files=[path])
    deadline, s = time.time() + 30, None
    while time.time() < deadline:
        s = dt.eval('window.segmuxState()')
        if s['status'] == 'error':
            break
        time.sleep(0.1)
    shown = dt.eval('document.getElementById("status").textContent')
    check(s['status'] == 'error' and shown.startswith('Error: holiday clip.mp4: ') and '/tmp' not in shown and
          'segmux-serve-' not in shown and shown.count('holiday clip.mp4') >= 1, 'the upload error shown: %r' % shown)
    print('page: a broken upload shows %r' % shown)
