"""Helpers of the `segmux serve` tests: a live server on 127.0.0.1 with an ephemeral port, on the
fixtures' tiny model, and plain-urllib clients. Every wait is bounded."""
import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'common'))
from coco_rle import decode_counts  # noqa: E402  (tests/common: shared with tests/outputs)

SEGMUX = os.environ.get('SEGMUX', 'build/release/segmux')
FIXTURES = os.environ.get('SEGMUX_FIXTURES', os.path.join(os.path.dirname(__file__), '../../../shared/fixtures'))
TINY = os.path.join(FIXTURES, 'sam31-tiny')
CACHE = os.environ.get('SEGMUX_SERVE_CACHE', os.path.join(tempfile.gettempdir(), 'segmux-serve-test-cache'))


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def allowed_dir(root):
    """A folder with the fixture frames, the fixture GIF, and a symlink that escapes it."""
    allow = os.path.join(root, 'allowed')
    os.makedirs(allow, exist_ok=True)
    shutil.copytree(os.path.join(TINY, 'video/frames'), os.path.join(allow, 'frames'))
    shutil.copy(os.path.join(TINY, 'video/video.gif'), os.path.join(allow, 'clip.gif'))
    outside = os.path.join(root, 'outside')
    os.makedirs(outside, exist_ok=True)
    shutil.copy(os.path.join(TINY, 'video/video.gif'), os.path.join(outside, 'secret.gif'))
    os.symlink(os.path.join(outside, 'secret.gif'), os.path.join(allow, 'escape.gif'))
    return allow


class Server:
    def __init__(self, *args, host='127.0.0.1', start_timeout=600, env=None, preexec=None):
        cmd = [SEGMUX, 'serve', '--host', host, '--port', '0', '--weights', os.path.join(TINY, 'weights.safetensors'),
               '--config', os.path.join(TINY, 'config.json'),
               '--vocab', os.path.join(TINY, 'tokenizer/bpe_simple_vocab_16e6.txt.gz'), '--cache-dir', CACHE] + list(args)
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=sys.stderr, text=True,
                                     env=dict(os.environ, **(env or {})), preexec_fn=preexec)
        deadline = time.time() + start_timeout
        line = ''
        self.first_lines = ''  # what it printed before "listening" (the agent-check port)
        while time.time() < deadline:  # the first start compiles the tiny model into CACHE
            line = self.proc.stdout.readline()
            self.first_lines += line
            if 'listening on' in line or not line:
                break
        check('listening on' in line, 'segmux serve did not start: %r (exit %s)' % (line, self.proc.poll()))
        self.url = line.split('listening on ')[1].strip().rstrip('/')
        self.port = int(self.url.rsplit(':', 1)[1])
        self.token = None

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        return self.proc.returncode

    def headers(self, extra=None):
        h = dict(extra or {})
        if self.token:
            h['Authorization'] = 'Bearer ' + self.token
        return h

    def call(self, method, path, body=None, headers=None, timeout=120):
        """(status, parsed JSON or bytes, headers) of one request."""
        data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
        headers = dict(headers or {})
        if body is not None:
            headers.setdefault('Content-Type', 'application/json')
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=self.headers(headers))
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                status, raw, hdrs = r.status, r.read(), r.headers
        except urllib.error.HTTPError as e:
            status, raw, hdrs = e.code, e.read(), e.headers
        if (hdrs.get('Content-Type') or '').startswith('application/json'):
            return status, json.loads(raw), hdrs
        return status, raw, hdrs

    def request(self, body, expect=200):
        status, j, _ = self.call('POST', '/api/request', body)
        check(status == expect, 'request %s: status %s, expected %s: %s' % (body, status, expect, j))
        return j

    def stream(self, body, max_lines=None, timeout=300):
        """Lines of a propagate_in_video stream; with max_lines, disconnects after that many."""
        conn = http.client.HTTPConnection('127.0.0.1', self.port, timeout=timeout)
        conn.request('POST', '/api/request', json.dumps(body), self.headers({'Content-Type': 'application/json'}))
        r = conn.getresponse()
        if r.status != 200:
            raise AssertionError('propagate_in_video: status %s: %s' % (r.status, r.read()[:500]))
        check(r.getheader('Content-Type', '').startswith('application/x-ndjson'), 'not NDJSON')
        lines = []
        while True:
            line = r.readline()
            if not line:
                break
            lines.append(json.loads(line))
            if max_lines and len(lines) >= max_lines:
                conn.sock.close()  # the client goes away mid-propagation
                break
        conn.close()
        return lines


def decode_compressed(counts):
    """The server's compressed RLE strings, decoded independently of segmux (tests/common/coco_rle.py)."""
    return decode_counts(counts)


def mask_pixels(runs):
    """Set of column-major indices of the 1 pixels of uncompressed runs."""
    on, pos = set(), 0
    for i, n in enumerate(runs):
        if i % 2:
            on.update(range(pos, pos + n))
        pos += n
    return on


def iou(a, b):
    return 1.0 if not a and not b else len(a & b) / len(a | b)


def expect_like_trace(got, ref, where):
    """Our {"frame_index","outputs"} against the official trace's frame as `segmux parity --video` checks
    it: same ids, probabilities within 1e-3, mask IoU >= 0.99."""
    out = got['outputs']
    check(out['out_obj_ids'] == ref['obj_ids'], '%s: ids %s, official %s' % (where, out['out_obj_ids'], ref['obj_ids']))
    for k, (p, q) in enumerate(zip(out['out_probs'], ref['probs'])):
        check(abs(p - q) <= 1e-3, '%s object %s: prob %s, official %s' % (where, ref['obj_ids'][k], p, q))
    for k, m in enumerate(ref['masks_rle']):
        have = mask_pixels(decode_compressed(out['out_binary_masks'][k]['counts']))
        want = mask_pixels(m['counts'])
        check(iou(have, want) >= 0.99, '%s object %s: IoU %.4f' % (where, ref['obj_ids'][k], iou(have, want)))


def load_trace():
    with open(os.path.join(TINY, 'video/trace.json')) as f:
        return json.load(f)
