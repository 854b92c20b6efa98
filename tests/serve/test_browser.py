"""The web page of `segmux serve` in a real browser: Debian's headless Chromium, driven over the
DevTools protocol (a small websocket client in the standard library), against a live server on the
fixtures' tiny model. It loads the page with ?video=frames&prompt=shape&autorun=1 (open, prompt,
propagate), waits for the masks, checks the DOM and the overlay canvas, clicks an object's Remove
button, checks again and keeps a screenshot. Then it clicks on the frame with the mouse as a person
would (browser_clicks.py): a refinement of a tracked object, server errors shown on the page, and a
session started from clicks alone (points, shift-click, the negative toggle, a dragged box, Propagate,
Remove), checking each request the page sent, the answer taken and the marks drawn; mask prompts
(browser_masks.py) and the image predictor (browser_image.py: upload, click, candidates with scores,
pick, refine with the picked logits, at the official goldens). Around them
(page_checks.py): JSON 404s, PNG frames, errors without server paths, the CLI's object colours, the
progress total, and sessions closed when the page is left and listed (and ended) across tabs.
Usage: test_browser.py SCREENSHOT.png [SMALL_COPY.png (and SMALL_COPY-clicks.png)]"""
import base64
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request

from serve_util import Server, allowed_dir, check, load_trace
import browser_clicks
import browser_image
import browser_masks
import page_checks

CHROMIUM = os.environ.get('CHROMIUM', shutil.which('chromium') or shutil.which('chromium-browser') or 'chromium')


class DevTools:
    """Just enough of RFC 6455 for the DevTools protocol: text frames, client masking, no extensions."""

    def __init__(self, ws_url, timeout=30):
        rest = ws_url.split('://', 1)[1]
        hostport, path = rest.split('/', 1)
        host, port = hostport.rsplit(':', 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(('GET /%s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n'
                           'Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n' % (path, hostport, key)).encode())
        head = b''
        while b'\r\n\r\n' not in head:
            chunk = self.sock.recv(4096)
            check(chunk, 'DevTools closed the handshake')
            head += chunk
        check(head.startswith(b'HTTP/1.1 101'), 'websocket handshake: %r' % head[:80])
        self.buf = head.split(b'\r\n\r\n', 1)[1]
        self.next_id = 0

    def _read(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(1 << 16)
            check(chunk, 'DevTools closed the connection')
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def _send(self, text):
        payload = text.encode()
        n = len(payload)
        head = bytes([0x81]) + (bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + struct.pack('>H', n)
                                if n < 65536 else bytes([0x80 | 127]) + struct.pack('>Q', n))
        mask = os.urandom(4)
        self.sock.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def _message(self):
        data = b''
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7f
            if n == 126:
                n = struct.unpack('>H', self._read(2))[0]
            elif n == 127:
                n = struct.unpack('>Q', self._read(8))[0]
            payload = self._read(n)
            opcode = b0 & 0x0f
            if opcode == 8:
                raise AssertionError('DevTools closed the websocket')
            if opcode in (0, 1, 2):
                data += payload
                if b0 & 0x80:
                    return json.loads(data)

    def call(self, method, **params):
        self.next_id += 1
        self._send(json.dumps({'id': self.next_id, 'method': method, 'params': params}))
        while True:  # events in between are skipped
            msg = self._message()
            if msg.get('id') == self.next_id:
                check('error' not in msg, '%s: %s' % (method, msg.get('error')))
                return msg['result']

    def eval(self, expression):
        r = self.call('Runtime.evaluate', expression=expression, returnByValue=True, awaitPromise=True)
        check('exceptionDetails' not in r, 'page script failed: %s' % r.get('exceptionDetails'))
        return r['result'].get('value')


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def wait_state(dt, statuses, timeout):
    deadline, state = time.time() + timeout, None
    while time.time() < deadline:
        state = dt.eval('window.segmuxState ? window.segmuxState() : null')
        if state and state['status'] in statuses:
            return state
        if state and state['status'] == 'error' and 'error' not in statuses:
            raise AssertionError('the page reports an error: %s' % state['error'])
        time.sleep(0.2)
    raise AssertionError('the page did not reach %s in %d s: %s' % (statuses, timeout, state))


def main():
    screenshot = sys.argv[1] if len(sys.argv) > 1 else 'serve_page.png'
    trace = load_trace()
    refs = {f['frame_index']: f for f in trace['outputs']}
    with tempfile.TemporaryDirectory(prefix='segmux-serve-browser-') as root:
        allow = allowed_dir(root)
        srv = Server('--allow-dir', allow)
        try:
            page_checks.routes_and_frames(srv)
            page_checks.errors_hide_server_paths(srv, allow)
        except BaseException:
            srv.stop()
            raise
        port = free_port()
        browser = subprocess.Popen([CHROMIUM, '--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
                                    '--disable-dev-shm-usage', '--user-data-dir=' + os.path.join(root, 'profile'),
                                    '--remote-debugging-address=127.0.0.1', '--remote-debugging-port=%d' % port,
                                    '--window-size=1280,720', 'about:blank'],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline, pages = time.time() + 30, []
            while time.time() < deadline and not pages:
                try:
                    with urllib.request.urlopen('http://127.0.0.1:%d/json/list' % port, timeout=5) as r:
                        pages = [p for p in json.load(r) if p.get('type') == 'page']
                except OSError:
                    time.sleep(0.2)
            check(pages, 'chromium did not open its DevTools port')
            dt = DevTools(pages[0]['webSocketDebuggerUrl'])
            dt.call('Page.enable')
            dt.call('Page.navigate', url=srv.url + '/?video=frames&prompt=%s&autorun=1&show=8' % trace['prompt'])
            state = wait_state(dt, ['autorun-done'], 45)
            # The masks arrived and are drawn: every frame's outputs, the official ids, pixels on the overlay.
            check(state['frames_with_outputs'] == len(refs), 'frames with outputs: %s' % state)
            ids = sorted({i for f in trace['outputs'] for i in f['obj_ids']})
            check(state['objects'] == ids, 'objects %s, official %s' % (state['objects'], ids))
            check(state['current_ids'] == refs[8]['obj_ids'], 'frame 8 ids %s' % state['current_ids'])
            check(state['overlay_pixels'] > 0, 'nothing drawn on the overlay canvas')
            rows = dt.eval('[...document.querySelectorAll("#objects li")].map(li => Number(li.dataset.objId))')
            check(rows == ids, 'object list %s' % rows)
            choice = dt.eval('[...document.querySelectorAll("#click-object option")].map(o => o.value)')
            check(choice == ['new', 'exemplar'] + [str(i) for i in ids], 'the object choice for clicks: %s' % choice)
            check(not dt.eval('document.getElementById("click-object").disabled'), 'the object choice is disabled')
            page_checks.colors_match_cli(dt, root, trace, state, 8)
            page_checks.progress_has_total(dt, state)
            # Click Remove on the second object, as a person would.
            gone = ids[1]
            dt.eval('document.querySelector(\'#objects li[data-obj-id="%d"] button.remove\').click()' % gone)
            after = wait_state(dt, ['removed'], 20)
            check(gone not in after['objects'] and gone not in after['current_ids'], 'after Remove: %s' % after)
            check(0 < after['overlay_pixels'] < state['overlay_pixels'], 'overlay after Remove: %s vs %s' %
                  (after['overlay_pixels'], state['overlay_pixels']))
            shot = dt.call('Page.captureScreenshot', format='png')
            os.makedirs(os.path.dirname(os.path.abspath(screenshot)), exist_ok=True)
            with open(screenshot, 'wb') as f:
                f.write(base64.b64decode(shot['data']))
            if len(sys.argv) > 2:  # a smaller copy for docs/serve.png
                small = dt.call('Page.captureScreenshot', format='png',
                                clip={'x': 0, 'y': 0, 'width': 1100, 'height': 620, 'scale': 0.6})
                with open(sys.argv[2], 'wb') as f:
                    f.write(base64.b64decode(small['data']))
            print('browser: %d frames, objects %s, removed %d, overlay pixels %d -> %d; screenshot %s' %
                  (state['frames_with_outputs'], state['objects'], gone, state['overlay_pixels'],
                   after['overlay_pixels'], screenshot))
            browser_clicks.refine_and_errors(dt, srv, trace, after)
            browser_clicks.clicks_only(dt, srv, screenshot.replace('.png', '_clicks.png'),
                                       sys.argv[2].replace('.png', '-clicks.png') if len(sys.argv) > 2 else None)
            browser_masks.paint_and_upload(dt, srv, root)
            browser_image.click_and_refine(dt)
            page_checks.upload_error_on_page(dt, srv, root)
            page_checks.reloads_and_sessions(dt, srv, port, DevTools)
        finally:
            browser.terminate()
            try:
                browser.wait(timeout=10)
            except subprocess.TimeoutExpired:
                browser.kill()
            srv.stop()
    print('test_browser: ok')


if __name__ == '__main__':
    sys.exit(main())
