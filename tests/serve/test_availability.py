"""`segmux serve` under hostile clients on 127.0.0.1 (issue 22.1, 24.2), bounded in time and requests:
/healthz keeps answering while 20 clients send one header byte per second; headers have a total
limit; a chunked body hits --max-body-bytes while it is read; pipelined requests are answered in
order; SIGTERM stops promptly with a slow client and a streaming propagation in progress (draining
first: no new session, the open one still answers); a kill -9 leaves an upload folder that the next
server removes; a busy port is an error naming it; ids are random and follow X-Segmux-Session; the
agent-check port reports free session slots. Usage: test_availability.py (SEGMUX, SEGMUX_FIXTURES)."""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

from serve_util import SEGMUX, TINY, CACHE, Server, allowed_dir, check

UUID4 = r'[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}'
LIMITS = ['--header-timeout', '3', '--request-timeout', '8', '--max-body-bytes', '1048576', '--max-header-bytes',
          '32768', '--drain-timeout', '30', '--max-sessions', '2', '--agent-port', '0', '--replica-id', 'r7']


def start(allow, tmp, extra=()):
    """A server whose stdout also names its agent-check port."""
    srv = Server('--allow-dir', allow, *LIMITS, *extra, env={'TMPDIR': tmp})
    return srv


def agent_port(srv):
    return int(re.search(r'agent-check on port (\d+)', srv.first_lines).group(1))


def healthz_ms(port, timeout=5.0):
    """Milliseconds /healthz took on a fresh connection (raises if it does not answer in time)."""
    t0 = time.time()
    with socket.create_connection(('127.0.0.1', port), timeout=timeout) as s:
        s.sendall(b'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n')
        data = b''
        while b'\r\n\r\n' not in data or not data.endswith(b'}\n'):
            chunk = s.recv(4096)
            check(chunk, 'healthz: connection closed')
            data += chunk
    check(data.startswith(b'HTTP/1.1 200'), 'healthz: %r' % data[:80])
    return (time.time() - t0) * 1000


def read_response(sock, timeout=10):
    """(status, headers dict, body bytes) of one Content-Length response read from sock."""
    sock.settimeout(timeout)
    buf = getattr(sock, 'pending', b'')
    while b'\r\n\r\n' not in buf:
        chunk = sock.recv(65536)
        check(chunk, 'connection closed before a response head: %r' % buf[:200])
        buf += chunk
    head, rest = buf.split(b'\r\n\r\n', 1)
    lines = head.decode('latin-1').split('\r\n')
    status = int(lines[0].split()[1])
    headers = {k.strip().lower(): v.strip() for k, v in (l.split(':', 1) for l in lines[1:])}
    n = int(headers.get('content-length', '0'))
    while len(rest) < n:
        chunk = sock.recv(65536)
        check(chunk, 'connection closed in a response body')
        rest += chunk
    sock.pending = rest[n:]
    return status, headers, rest[:n]


class Sock(socket.socket):
    pending = b''


def connect(port, timeout=10):
    s = Sock(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(('127.0.0.1', port))
    return s


def slow_clients_keep_healthz(srv):
    """20 clients send one header byte per second; /healthz answers throughout; they get 408."""
    stop = threading.Event()
    outcomes = []

    def dribble():
        s = connect(srv.port)
        got = b''
        try:
            for b in b'GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ' + b'a' * 100:
                if stop.is_set():
                    break
                s.sendall(bytes([b]))
                time.sleep(1)
        except OSError:
            pass
        try:
            s.settimeout(5)
            got = s.recv(4096)
        except OSError:
            pass
        outcomes.append(got[:12])
        s.close()

    threads = [threading.Thread(target=dribble) for _ in range(20)]
    for t in threads:
        t.start()
    worst = 0.0
    t_end = time.time() + 8  # past --header-timeout 3
    n = 0
    while time.time() < t_end:
        worst = max(worst, healthz_ms(srv.port, timeout=2))
        n += 1
        time.sleep(0.2)
    status, m, _ = srv.call('GET', '/metrics', timeout=5)
    check(status == 200, 'metrics under slow clients: %s' % status)
    stop.set()
    for t in threads:
        t.join(timeout=30)
    check(len(outcomes) == 20 and all(o.startswith(b'HTTP/1.1 408') for o in outcomes),
          'slow clients were not cut off with 408: %s' % outcomes)
    check(worst < 1000, 'healthz took %.0f ms under 20 slow clients' % worst)
    print('slow clients: 20 x 1 byte/s, /healthz answered %d times, worst %.1f ms; all 20 got 408' % (n, worst))


class HealthWatch:
    """Polls /healthz every 0.2 s on fresh connections while attacks run; records failures and the worst time."""

    def __init__(self, port):
        self.port, self.worst, self.n, self.failures = port, 0.0, 0, []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run)
        self.thread.start()

    def run(self):
        while not self.stop.is_set():
            try:
                self.worst = max(self.worst, healthz_ms(self.port, timeout=2))
                self.n += 1
            except Exception as e:  # noqa: BLE001
                self.failures.append(str(e))
            time.sleep(0.2)

    def finish(self):
        self.stop.set()
        self.thread.join(timeout=10)
        check(not self.failures and self.worst < 1000,
              '/healthz during the attacks: %d failures %s, worst %.0f ms' % (len(self.failures), self.failures[:3], self.worst))
        print('/healthz during every attack: %d answers, worst %.1f ms, no failure' % (self.n, self.worst))


def header_limit(srv):
    rss_before = srv.call('GET', '/metrics')[1]['rss_bytes']
    s = connect(srv.port)
    sent = 0
    try:
        s.sendall(b'GET /healthz HTTP/1.1\r\nHost: x\r\n')
        line = b'X-Filler: ' + b'f' * 100 + b'\r\n'
        for _ in range(50000):  # 5.5 MB of headers at most, each line short
            s.sendall(line)
            sent += len(line)
    except OSError:
        pass
    status, _, body = read_response(s)
    s.close()
    check(status == 431 and b'max-header-bytes' in body, 'huge headers: %s %r' % (status, body))
    check(sent < 4 << 20, 'the server read %d bytes of headers before refusing' % sent)
    grew = srv.call('GET', '/metrics')[1]['rss_bytes'] - rss_before
    check(grew < 64 << 20, 'RSS grew by %d bytes under huge headers' % grew)
    print('headers: refused with 431 after %d bytes sent (limit 32768)' % sent)


def chunked_limit(srv):
    s = connect(srv.port)
    s.sendall(b'POST /api/request HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n'
              b'Transfer-Encoding: chunked\r\n\r\n')
    chunk = b'10000\r\n' + b' ' * 0x10000 + b'\r\n'
    sent = 0
    try:
        for _ in range(1024):  # 64 MiB at most; the limit is 1 MiB
            s.sendall(chunk)
            sent += len(chunk)
    except OSError:
        pass
    status, _, body = read_response(s)
    s.close()
    check(status == 413 and b'max-body-bytes' in body, 'chunked over the limit: %s %r' % (status, body))
    check(sent < 32 << 20, 'the server read %d bytes of a chunked body before refusing' % sent)
    s = connect(srv.port)  # one chunk announcing more than the limit: refused before its data
    s.sendall(b'POST /api/request HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFF\r\n')
    status, _, _ = read_response(s)
    s.close()
    check(status == 413, 'a huge chunk size: %s' % status)
    print('chunked body: refused with 413 after %d bytes sent (limit 1048576)' % sent)


def pipelined(srv):
    s = connect(srv.port)
    body = json.dumps({'type': 'close_session', 'session_id': 'nope'}).encode()
    s.sendall(b'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'
              b'GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n'
              b'POST /api/request HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ' +
              str(len(body)).encode() + b'\r\n\r\n' + body +
              b'GET /api/videos HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
    answers = [read_response(s) for _ in range(4)]
    s.close()
    check([a[0] for a in answers] == [200, 200, 200, 200], 'pipelined statuses %s' % [a[0] for a in answers])
    check(b'"status":"ok"' in answers[0][2] and b'max_sessions' in answers[1][2] and b'is_success' in answers[2][2]
          and b'videos' in answers[3][2], 'pipelined answers out of order: %s' % [a[2][:40] for a in answers])
    print('pipelining: 4 requests in one write, 4 answers in order')


def ids_headers_agent(srv):
    port = agent_port(srv)

    def agent():
        with socket.create_connection(('127.0.0.1', port), timeout=5) as s:
            return s.recv(100).decode().strip()

    check(agent() == 'up 100%', 'agent with no session: %r' % agent())
    status, j, h = srv.call('POST', '/api/request', {'type': 'start_session', 'resource_path': 'frames'})
    sid = j['session_id']
    check(status == 200 and re.fullmatch('r7.' + UUID4, sid), 'session id %r' % sid)
    check(h.get('X-Segmux-Session') == sid, 'start_session answer header %r' % h.get('X-Segmux-Session'))
    check(agent() == 'up 50%', 'agent with 1 of 2 sessions: %r' % agent())
    # The header stands for session_id; both must agree.
    status, j, h = srv.call('POST', '/api/request', {'type': 'add_prompt', 'frame_index': 0, 'text': 'shape'},
                            headers={'X-Segmux-Session': sid})
    check(status == 200 and 'outputs' in j and h.get('X-Segmux-Session') == sid, 'header-only add_prompt: %s' % status)
    status, j, _ = srv.call('POST', '/api/request', {'type': 'reset_session', 'session_id': sid},
                            headers={'X-Segmux-Session': 'r7.other'})
    check(status == 400 and 'differ' in j['error'], 'header and session_id differ: %s %s' % (status, j))
    status, j, h = srv.call('POST', '/api/upload?filename=clip.gif', open(os.path.join(TINY, 'video/video.gif'), 'rb').read(),
                            headers={'Content-Type': 'application/octet-stream'})
    check(status == 200 and re.fullmatch('r7.' + UUID4, j['upload_id']) and h.get('X-Segmux-Upload') == j['upload_id'],
          'upload id %s %s' % (status, j))
    second = srv.request({'type': 'start_session', 'resource_path': j['resource_path']})['session_id']
    check(second != sid and agent() == 'up 0%', 'agent when full: %r' % agent())
    status, j, h = srv.call('POST', '/api/request', {'type': 'start_session', 'resource_path': 'frames'})
    check(status == 429 and h.get('Retry-After') == '5', '429 without Retry-After: %s %s' % (status, dict(h)))
    srv.request({'type': 'close_session', 'session_id': second})
    status, j, _ = srv.call('GET', '/readyz')
    check(status == 200 and j['status'] == 'ready', 'readyz %s %s' % (status, j))
    print('ids: %s (replica-tagged uuid4), X-Segmux-Session honoured, agent 100%%/50%%/0%%, 429 Retry-After' % sid)
    return sid


def sigterm_drains_then_stops(srv, sid):
    """A slow client and a streaming propagation in progress; SIGTERM drains, then stops promptly."""
    slow = connect(srv.port)
    slow.sendall(b'GET /metrics HTTP/1.1\r\n')  # and never more
    lines = []

    def propagate():
        try:
            lines.extend(srv.stream({'type': 'propagate_in_video', 'session_id': sid}, timeout=60))
        except Exception as e:  # noqa: BLE001  (the stream may be cut at the stop)
            lines.append({'error': str(e)})

    t = threading.Thread(target=propagate)
    t.start()
    time.sleep(0.3)
    t0 = time.time()
    srv.proc.send_signal(signal.SIGTERM)
    time.sleep(0.5)
    status, j, h = srv.call('POST', '/api/request', {'type': 'start_session', 'resource_path': 'frames'})
    check(status == 503 and 'draining' in j['error'] and h.get('Retry-After'), 'start_session while draining: %s %s' % (status, j))
    check(srv.call('GET', '/readyz')[0] == 503, 'readyz while draining')
    check(srv.call('GET', '/healthz')[0] == 200, 'healthz while draining')
    t.join(timeout=60)
    status, j, _ = srv.call('POST', '/api/request', {'type': 'add_prompt', 'session_id': sid, 'frame_index': 1, 'text': 'shape'})
    check(status == 200, 'the open session while draining: %s %s' % (status, j))
    srv.request({'type': 'close_session', 'session_id': sid})
    try:
        code = srv.proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        srv.proc.kill()
        srv.proc.wait(timeout=10)
        raise AssertionError('segmux serve still running 15 s after its last session closed (SIGTERM)')
    slow.close()
    check(code == 0, 'exit status %s' % code)
    print('SIGTERM: drained (503 for new sessions, the open one answered), exited %.1f s after the signal' % (time.time() - t0))


def sigterm_with_busy_request_is_bounded(allow, tmp):
    """A second SIGTERM stops at once, even while a propagation streams and a slow client hangs on."""
    srv = start(allow, tmp)
    sid = srv.request({'type': 'start_session', 'resource_path': 'frames'})['session_id']
    srv.request({'type': 'add_prompt', 'session_id': sid, 'frame_index': 0, 'text': 'shape'})
    slow = dribbler(srv.port)
    conn_lines = []
    t = threading.Thread(target=lambda: conn_lines.extend(_safe_stream(srv, sid)))
    t.start()
    time.sleep(0.2)
    t0 = time.time()
    srv.proc.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    srv.proc.send_signal(signal.SIGTERM)
    try:
        code = srv.proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        srv.proc.kill()
        srv.proc.wait(timeout=10)
        raise AssertionError('segmux serve ignored two SIGTERMs for 20 s')
    t.join(timeout=30)
    slow.set()
    check(code == 0, 'exit status %s' % code)
    print('second SIGTERM: stopped in %.1f s with a stream and a slow client open' % (time.time() - t0))


def dribbler(port, seconds=40):
    """A client sending a request's headers at 2 bytes a second (it held an httplib worker for ever).
    Returns an Event that stops it."""
    stop = threading.Event()

    def run():
        s = connect(port)
        try:
            for _ in range(seconds * 2):
                if stop.is_set():
                    break
                s.sendall(b'x' if _ else b'GET /metrics HTTP/1.1\r\nX-Slow: ')
                time.sleep(0.5)
        except OSError:
            pass
        s.close()

    threading.Thread(target=run, daemon=True).start()
    time.sleep(0.2)
    return stop


def _safe_stream(srv, sid):
    try:
        return srv.stream({'type': 'propagate_in_video', 'session_id': sid}, timeout=60)
    except Exception as e:  # noqa: BLE001
        return [{'error': str(e)}]


def kill9_folder_cleaned(allow, tmp):
    srv = start(allow, tmp)
    status, j, _ = srv.call('POST', '/api/upload?filename=clip.gif', open(os.path.join(TINY, 'video/video.gif'), 'rb').read(),
                            headers={'Content-Type': 'application/octet-stream'})
    check(status == 200, 'upload: %s' % status)
    before = set(os.listdir(tmp))
    srv.proc.kill()
    srv.proc.wait(timeout=10)
    left = [n for n in os.listdir(tmp) if n.startswith('segmux-serve-')]
    check(left, 'kill -9 left no folder (nothing to test)')
    foreign = os.path.join(tmp, 'segmux-serve-foreign')  # not a server's (no lock file): must stay
    os.makedirs(foreign, exist_ok=True)
    second = start(allow, tmp)
    try:
        now = set(os.listdir(tmp))
        check(not (set(left) & now), 'a dead server\'s upload folder stayed: %s' % (set(left) & now))
        check('segmux-serve-foreign' in now, 'a folder that is not a dead server\'s was removed')
    finally:
        check(second.stop() == 0, 'exit status')
    os.rmdir(foreign)
    check(os.listdir(tmp) == [], 'left in TMPDIR: %s (before: %s)' % (os.listdir(tmp), before))
    print('kill -9: the next server removed the dead one\'s upload folder, kept a foreign one')


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def loading_then_ready(root, tmp):
    """While the model compiles (a fresh cache), /healthz answers, /readyz and the API say 503 loading."""
    port, cache = free_port(), os.path.join(root, 'fresh-cache')
    proc = subprocess.Popen([SEGMUX, 'serve', '--port', str(port), '--weights', os.path.join(TINY, 'weights.safetensors'),
                             '--config', os.path.join(TINY, 'config.json'), '--vocab',
                             os.path.join(TINY, 'tokenizer/bpe_simple_vocab_16e6.txt.gz'), '--cache-dir', cache],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ, TMPDIR=tmp))
    seen = []
    try:
        deadline = time.time() + 300
        while time.time() < deadline:
            try:
                with connect(port, timeout=5) as s:
                    s.sendall(b'GET /readyz HTTP/1.1\r\nHost: x\r\n\r\nPOST /api/request HTTP/1.1\r\nHost: x\r\n'
                              b'Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}')
                    ready, _, body = read_response(s)
                    api, headers, api_body = read_response(s)
            except OSError:
                time.sleep(0.1)
                continue
            seen.append(ready)
            if ready == 200:
                break
            check(ready == 503 and b'loading' in body and api == 503 and b'loading' in api_body and
                  headers.get('retry-after'), 'while loading: readyz %s %r, api %s %r' % (ready, body, api, api_body))
            if len(seen) == 1:
                check(healthz_ms(port) < 1000, 'healthz while loading')
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    check(seen and seen[0] == 503 and seen[-1] == 200, '/readyz during the start: %s' % seen)
    print('loading: /readyz 503 "loading" %d times (API 503 too, /healthz 200), then 200' % (len(seen) - 1))


def cpu_ticks(pid):
    with open('/proc/%d/stat' % pid) as f:
        fields = f.read().rsplit(')', 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def fd_limit_respected(allow, tmp):
    """Under a 64-file limit, 200 connections: the server drops the oldest idle ones instead of spinning
    on a failing accept, and /healthz answers."""
    import resource
    srv = Server('--allow-dir', allow, env={'TMPDIR': tmp},
                 preexec=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64)))
    socks = []
    try:
        for _ in range(200):
            socks.append(socket.create_connection(('127.0.0.1', srv.port), timeout=5))
        time.sleep(0.5)
        before = cpu_ticks(srv.proc.pid)
        time.sleep(2)
        busy = cpu_ticks(srv.proc.pid) - before
        ms = healthz_ms(srv.port)
        check(busy < 50, 'the server used %d CPU ticks in 2 s with 200 idle connections (spinning)' % busy)
    finally:
        for s in socks:
            s.close()
        check(srv.stop() == 0, 'exit status')
    print('64-file limit, 200 connections: %d CPU ticks in 2 s, /healthz %.1f ms' % (busy, ms))


def busy_port(srv):
    t0 = time.time()
    r = subprocess.run([SEGMUX, 'serve', '--port', str(srv.port), '--weights', os.path.join(TINY, 'weights.safetensors'),
                        '--config', os.path.join(TINY, 'config.json'), '--vocab',
                        os.path.join(TINY, 'tokenizer/bpe_simple_vocab_16e6.txt.gz'), '--cache-dir', CACHE],
                       capture_output=True, text=True, timeout=120)
    check(r.returncode != 0 and str(srv.port) in r.stderr and 'in use' in r.stderr and 'listening' not in r.stdout,
          'a second server on a busy port: exit %s, %r %r' % (r.returncode, r.stdout, r.stderr))
    check(srv.call('GET', '/healthz')[0] == 200, 'the first server after the second one failed')
    print('busy port: refused in %.2f s: %s' % (time.time() - t0, r.stderr.strip().splitlines()[-1]))


def main():
    with tempfile.TemporaryDirectory(prefix='segmux-serve-avail-') as root:
        allow = allowed_dir(root)
        tmp = os.path.join(root, 'tmp')
        os.makedirs(tmp)
        srv = start(allow, tmp)
        try:
            watch = HealthWatch(srv.port)
            busy_port(srv)
            slow_clients_keep_healthz(srv)
            header_limit(srv)
            chunked_limit(srv)
            pipelined(srv)
            watch.finish()
            sid = ids_headers_agent(srv)
            sigterm_drains_then_stops(srv, sid)
        finally:
            srv.stop()
        sigterm_with_busy_request_is_bounded(allow, tmp)
        loading_then_ready(root, tmp)
        fd_limit_respected(allow, tmp)
        kill9_folder_cleaned(allow, tmp)
    print('test_availability: ok')


if __name__ == '__main__':
    sys.exit(main())
