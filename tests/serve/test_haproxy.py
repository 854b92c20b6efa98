"""A real HAProxy (Debian's `haproxy`, scripts/setup.sh) on 127.0.0.1 running deploy/haproxy/haproxy.cfg in
front of three `segmux serve` replicas of the fixtures' tiny model (issue 23, online items 1-4): every
request of a session reaches its replica; new sessions spread by free slots; a replica draining on
SIGTERM keeps its sessions working and takes no new ones; a killed replica fails only its own sessions,
with an error naming it; a propagation streams line by line through the proxy; no id answers for
another client's session or upload. Bounded in requests and time; stops what it started, by pid.
Usage: test_haproxy.py (SEGMUX, SEGMUX_FIXTURES in env; skipped with exit 0 when haproxy is absent
only if SEGMUX_ALLOW_SKIP=1)."""
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

from serve_util import TINY, Server, allowed_dir, check

CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), '../../deploy/haproxy/haproxy.cfg')
GIF = os.path.join(TINY, 'video/video.gif')


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


class Proxy:
    """HAProxy on the committed config, its ports and socket replaced by the test's."""

    def __init__(self, root, replicas):
        self.port = free_port()
        self.admin = os.path.join(root, 'haproxy.sock')
        text = open(CONFIG).read()
        text = text.replace('/run/haproxy/segmux-admin.sock', self.admin)
        text = text.replace('bind 127.0.0.1:8080', 'bind 127.0.0.1:%d' % self.port)
        for i, r in enumerate(replicas, 1):
            text = text.replace('127.0.0.1:808%d agent-port 908%d' % (i, i),
                                '127.0.0.1:%d agent-port %d' % (r.port, r.agent_port))
        servers = [l for l in text.splitlines() if l.strip().startswith('server ')]
        check(len(servers) == 3 and all(str(r.port) in l for r, l in zip(replicas, servers))
              and 'bind 127.0.0.1:%d' % self.port in text, 'the config changed shape: %s' % text)
        cfg = os.path.join(root, 'haproxy.cfg')
        with open(cfg, 'w') as f:
            f.write(text)
        self.proc = subprocess.Popen(['haproxy', '-db', '-f', cfg], stdout=subprocess.DEVNULL, stderr=sys.stderr)
        self.wait_servers_up(3)

    def admin_cmd(self, cmd):
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(5)
            s.connect(self.admin)
            s.sendall(cmd.encode() + b'\n')
            out = b''
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                out += chunk
        return out.decode()

    def server_states(self):
        """{name: (status, weight)} from `show stat`."""
        lines = self.admin_cmd('show stat').splitlines()
        head = lines[0].lstrip('# ').split(',')
        out = {}
        for line in lines[1:]:
            row = dict(zip(head, line.split(',')))
            if row.get('pxname') == 'segmux' and row.get('svname') not in ('BACKEND', 'FRONTEND', None):
                out[row['svname']] = (row['status'], int(row['weight'] or 0))
        return out

    def wait_servers_up(self, n, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                st = self.server_states()
                if sum(1 for s, _ in st.values() if s.startswith('UP')) >= n:
                    return st
            except OSError:
                pass
            time.sleep(0.2)
        raise AssertionError('haproxy: servers not up: %s' % self.server_states())

    def call(self, method, path, body=None, headers=None, timeout=60):
        conn = http.client.HTTPConnection('127.0.0.1', self.port, timeout=timeout)
        data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
        h = dict(headers or {})
        if body is not None:
            h.setdefault('Content-Type', 'application/json')
        conn.request(method, path, data, h)
        r = conn.getresponse()
        raw = r.read()
        conn.close()
        try:
            return r.status, json.loads(raw), r.headers
        except ValueError:
            return r.status, raw, r.headers

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


def replica_of(sid):
    return sid.split('.', 1)[0]


def start_sessions(lb, n, resource='frames'):
    sids = []
    for _ in range(n):
        status, j, h = lb.call('POST', '/api/request', {'type': 'start_session', 'resource_path': resource})
        check(status == 200, 'start_session through the proxy: %s %s' % (status, j))
        check(h.get('X-Segmux-Session') == j['session_id'], 'no X-Segmux-Session on start_session')
        sids.append(j['session_id'])
        time.sleep(0.8)  # > agent-inter: the proxy learns the new free slots
    return sids


def affinity(lb, sids):
    """Every kind of request of each session, through the proxy, reaches the session's replica."""
    n = 0
    for sid in sids:
        for body in ({'type': 'add_prompt', 'session_id': sid, 'frame_index': 0, 'text': 'shape'},
                     {'type': 'reset_session', 'session_id': sid}):
            status, j, h = lb.call('POST', '/api/request', body)
            check(status == 200, 'session %s: %s answered %s %s' % (sid, body['type'], status, j))
            n += 1
        status, j, _ = lb.call('POST', '/api/request', {'type': 'add_prompt', 'frame_index': 0, 'text': 'shape'},
                               headers={'X-Segmux-Session': sid})  # the header alone routes it
        check(status == 200, 'session %s by header: %s %s' % (sid, status, j))
        status, raw, _ = lb.call('GET', '/api/export?session_id=%s&what=tracks' % sid)  # by query parameter
        check(status == 200, 'session %s export: %s' % (sid, status))
        n += 2
    return n


def long_clip(allow, frames=48):
    """The fixture frames repeated: the tiny model delivers frames in batches of 16, so a 48-frame clip
    streams in three bursts seconds apart (a 16-frame one arrives all at once, proxy or not)."""
    src = os.path.join(allow, 'frames')
    names = sorted(os.listdir(src))
    os.makedirs(os.path.join(allow, 'long'))
    for k in range(frames):
        shutil.copy(os.path.join(src, names[k % len(names)]), os.path.join(allow, 'long', '%05d.png' % k))
    return 'long'


def stream_through_proxy(lb, resource):
    status, j, _ = lb.call('POST', '/api/request', {'type': 'start_session', 'resource_path': resource})
    check(status == 200, 'start_session %s: %s %s' % (resource, status, j))
    sid = j['session_id']
    status, j, _ = lb.call('POST', '/api/request', {'type': 'add_prompt', 'session_id': sid, 'frame_index': 0, 'text': 'shape'})
    check(status == 200, 'add_prompt: %s %s' % (status, j))
    conn = http.client.HTTPConnection('127.0.0.1', lb.port, timeout=120)
    t0 = time.time()
    conn.request('POST', '/api/request', json.dumps({'type': 'propagate_in_video', 'session_id': sid}),
                 {'Content-Type': 'application/json'})
    r = conn.getresponse()
    check(r.status == 200 and r.getheader('Content-Type', '').startswith('application/x-ndjson'), 'stream %s' % r.status)
    times = []
    while True:
        line = r.readline()
        if not line:
            break
        check('frame_index' in json.loads(line), 'stream line %r' % line[:80])
        times.append(time.time() - t0)
    conn.close()
    check(len(times) == 48, 'stream: %d lines' % len(times))
    # The proxy passes each burst on as it comes (it does not hold the answer until its end).
    check(times[-1] - times[0] > 0.3, 'first line at %.2f s, last at %.2f s: buffered' % (times[0], times[-1]))
    lb.call('POST', '/api/request', {'type': 'close_session', 'session_id': sid})
    return times


def no_cross_answers(replicas, lb, sids, upload_ids):
    """A session or upload id never resolves on another replica; unknown ids get 404 through the proxy."""
    n = 0
    for r in replicas:
        for sid in sids:
            if replica_of(sid) == r.rid:
                continue
            status, j, _ = r.call('POST', '/api/request', {'type': 'add_prompt', 'session_id': sid, 'frame_index': 0,
                                                           'text': 'shape'})
            check(status == 404 and replica_of(sid) in j['error'], '%s answered for %s: %s %s' % (r.rid, sid, status, j))
            n += 1
        for uid in upload_ids:
            if replica_of(uid) == r.rid:
                continue
            status, j, _ = r.call('POST', '/api/request', {'type': 'start_session', 'resource_path': 'upload:' + uid})
            check(status == 404, '%s opened upload %s of another replica: %s' % (r.rid, uid, status))
            n += 1
    status, j, _ = lb.call('POST', '/api/request', {'type': 'add_prompt', 'session_id': 'r1.00000000-0000-4000-8000-000000000000',
                                                    'frame_index': 0, 'text': 'shape'})
    check(status == 404, 'a guessed id through the proxy: %s' % status)
    return n + 1


def main():
    if not shutil.which('haproxy'):
        if os.environ.get('SEGMUX_ALLOW_SKIP') == '1':
            print('test_haproxy: skipped (no haproxy; scripts/setup.sh installs it)')
            return 0
        raise AssertionError('haproxy is not installed (scripts/setup.sh installs it)')
    t_start = time.time()
    with tempfile.TemporaryDirectory(prefix='segmux-serve-lb-') as root:
        allow = allowed_dir(root)
        replicas, lb = [], None
        try:
            for i in (1, 2, 3):
                r = Server('--allow-dir', allow, '--replica-id', 'r%d' % i, '--agent-port', '0', '--max-sessions', '4',
                           '--drain-timeout', '120')
                r.rid = 'r%d' % i
                r.agent_port = int(re.search(r'agent-check on port (\d+)', r.first_lines).group(1))
                replicas.append(r)
            lb = Proxy(root, replicas)
            by_rid = {r.rid: r for r in replicas}
            # Uploads follow their id: start_session on an upload reaches the upload's replica.
            upload_ids = []
            for _ in range(3):
                status, j, h = lb.call('POST', '/api/upload?filename=clip.gif', open(GIF, 'rb').read(),
                                       headers={'Content-Type': 'application/octet-stream'})
                check(status == 200 and h.get('X-Segmux-Upload') == j['upload_id'], 'upload via proxy: %s %s' % (status, j))
                upload_ids.append(j['upload_id'])
            sids = start_sessions(lb, 1, 'upload:' + upload_ids[0])
            check(replica_of(sids[0]) == replica_of(upload_ids[0]), 'upload on %s, its session on %s' % (upload_ids[0], sids[0]))
            sids += start_sessions(lb, 5)
            spread = {rid: sum(1 for s in sids if replica_of(s) == rid) for rid in by_rid}
            check(all(v >= 1 for v in spread.values()) and max(spread.values()) <= 3, 'new sessions did not spread: %s' % spread)
            n_aff = affinity(lb, sids)
            times = stream_through_proxy(lb, long_clip(allow))
            n_cross = no_cross_answers(replicas, lb, sids, upload_ids)
            print('affinity: %d requests of %d sessions, each on its replica; spread %s' % (n_aff, len(sids), spread))
            print('stream via proxy: %d lines, first at %.2f s, last at %.2f s' % (len(times), times[0], times[-1]))
            print('no cross answers: %d foreign ids refused' % n_cross)

            # Drain r2 (SIGTERM): its sessions work, new sessions avoid it.
            r2 = by_rid['r2']
            r2.proc.send_signal(signal.SIGTERM)
            time.sleep(1.5)
            check(lb.server_states()['r2'][1] == 0, 'drained r2 keeps weight: %s' % lb.server_states())
            mine = [s for s in sids if replica_of(s) == 'r2']
            others = [s for s in sids if replica_of(s) != 'r2']
            for s in others:  # make room elsewhere
                lb.call('POST', '/api/request', {'type': 'close_session', 'session_id': s})
            time.sleep(1.0)
            new = start_sessions(lb, 3)
            check(not any(replica_of(s) == 'r2' for s in new), 'a new session went to the draining replica: %s' % new)
            affinity(lb, mine)
            for s in mine:
                lb.call('POST', '/api/request', {'type': 'close_session', 'session_id': s})
            r2.proc.wait(timeout=30)  # its last session closed: it stops
            check(r2.proc.returncode == 0, 'r2 exit %s' % r2.proc.returncode)
            print('drain: r2 kept its %d session(s) working, took none of 3 new ones, exited when they closed' % len(mine))

            # Kill r3: only its sessions fail, with an error naming it.
            victims = [s for s in new if replica_of(s) == 'r3']
            survivors = [s for s in new if replica_of(s) == 'r1']
            if not victims:
                victims = start_sessions(lb, 1)
            check(victims and all(replica_of(s) == 'r3' for s in victims), 'no session on r3 to kill: %s' % new)
            by_rid['r3'].proc.kill()
            by_rid['r3'].proc.wait(timeout=10)
            t_kill = time.time()
            deadline = t_kill + 20
            status, j = None, None
            while time.time() < deadline:
                status, j, _ = lb.call('POST', '/api/request', {'type': 'reset_session', 'session_id': victims[0]})
                if status == 404:
                    break
                time.sleep(0.3)
            check(status == 404 and 'r3' in j['error'], 'a killed replica\'s session: %s %s' % (status, j))
            t_fail = time.time() - t_kill
            for s in survivors:
                status, j, _ = lb.call('POST', '/api/request', {'type': 'reset_session', 'session_id': s})
                check(status == 200, 'r1 session after r3 died: %s %s' % (status, j))
            print('kill -9 r3: its session got 404 naming r3 after %.1f s; %d r1 session(s) unaffected' %
                  (t_fail, len(survivors)))
            for s in survivors:
                lb.call('POST', '/api/request', {'type': 'close_session', 'session_id': s})
            r1 = by_rid['r1']
            check(r1.stop() == 0, 'r1 exit status %s' % r1.proc.returncode)
        finally:
            if lb:
                lb.stop()
            for r in replicas:
                r.stop()
    print('test_haproxy: ok (%.0f s)' % (time.time() - t_start))
    return 0


if __name__ == '__main__':
    sys.exit(main())
