"""A bounded load test of `segmux serve` on loopback: N concurrent clients, each running R rounds of the
official flow (start_session, add_prompt, propagate_in_video, close_session) on the fixtures' tiny
model. Prints latency percentiles per request type and the server's RSS before, after the first round
and at the end; fails on any error other than a 503 (model busy) and if RSS grows by more than
--rss-growth-mib between the end of a concurrent warm-up round and the end. Usage:
  load_test.py [--clients 4] [--rounds 3] [--time-limit 120] [--rss-growth-mib 64]"""
import argparse
import concurrent.futures
import os
import sys
import tempfile
import threading
import time

from serve_util import Server, allowed_dir, check


def percentile(values, p):
    if not values:
        return float('nan')
    v = sorted(values)
    return v[min(len(v) - 1, int(round(p / 100.0 * (len(v) - 1))))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--clients', type=int, default=4)
    ap.add_argument('--rounds', type=int, default=3)
    ap.add_argument('--time-limit', type=float, default=120)
    ap.add_argument('--rss-growth-mib', type=float, default=64)
    a = ap.parse_args()
    check(1 <= a.clients <= 64 and 1 <= a.rounds <= 100, 'bounded: at most 64 clients and 100 rounds')
    lat, lock, errors, busy = {}, threading.Lock(), [], [0]
    deadline = time.time() + a.time_limit

    def timed(kind, fn):
        t = time.time()
        out = fn()
        with lock:
            lat.setdefault(kind, []).append(time.time() - t)
        return out

    def one_round(srv):
        status, j, _ = srv.call('POST', '/api/request', {'type': 'start_session', 'resource_path': 'frames'})
        if status in (429, 503):
            with lock:
                busy[0] += 1
            return
        check(status == 200, 'start_session: %s %s' % (status, j))
        sid = j['session_id']
        try:
            status, j, _ = timed('add_prompt', lambda: srv.call(
                'POST', '/api/request', {'type': 'add_prompt', 'session_id': sid, 'frame_index': 0, 'text': 'shape'}))
            if status == 503:
                with lock:
                    busy[0] += 1
                return
            check(status == 200, 'add_prompt: %s %s' % (status, j))
            lines = timed('propagate_in_video', lambda: srv.stream(
                {'type': 'propagate_in_video', 'session_id': sid, 'propagation_direction': 'forward'}))
            check(lines and 'error' not in lines[-1], 'propagation: %s' % (lines[-1] if lines else 'nothing'))
        finally:
            srv.call('POST', '/api/request', {'type': 'close_session', 'session_id': sid})

    def client(srv, rounds):
        for _ in range(rounds):
            if time.time() > deadline:
                return
            try:
                one_round(srv)
            except Exception as e:  # noqa: BLE001 - reported below
                with lock:
                    errors.append(str(e))

    with tempfile.TemporaryDirectory(prefix='segmux-serve-load-') as root:
        srv = Server('--allow-dir', allowed_dir(root), '--max-sessions', str(a.clients), '--busy-wait', '60')
        try:
            rss0 = srv.call('GET', '/metrics')[1]['rss_bytes']
            with concurrent.futures.ThreadPoolExecutor(a.clients) as pool:
                # Warm-up: one concurrent round, so that every later round needs no more memory.
                list(pool.map(lambda _: client(srv, 1), range(a.clients)))
                rss1 = srv.call('GET', '/metrics')[1]['rss_bytes']
                t0 = time.time()
                list(pool.map(lambda _: client(srv, a.rounds), range(a.clients)))
                wall = time.time() - t0
            m = srv.call('GET', '/metrics')[1]
        finally:
            srv.stop()
    load = os.getloadavg()
    print('load test: %d clients x %d rounds in %.1f s (load average %.1f %.1f %.1f)' %
          (a.clients, a.rounds, wall, *load))
    for kind, v in sorted(lat.items()):
        print('  %-20s n=%3d  p50 %.3f s  p90 %.3f s  p99 %.3f s  max %.3f s' %
              (kind, len(v), percentile(v, 50), percentile(v, 90), percentile(v, 99), max(v)))
    print('  busy answers (429/503): %d; server frames/s %.1f; sessions open at the end %d' %
          (busy[0], m['frames_per_second'], m['sessions']))
    print('  RSS: start %.1f MiB, after warm-up %.1f MiB, end %.1f MiB' %
          (rss0 / 2**20, rss1 / 2**20, m['rss_bytes'] / 2**20))
    check(not errors, 'errors: %s' % errors[:5])
    check(m['sessions'] == 0, 'sessions left open: %d' % m['sessions'])
    check(m['rss_bytes'] - rss1 <= a.rss_growth_mib * 2**20, 'RSS grew by %.1f MiB' % ((m['rss_bytes'] - rss1) / 2**20))
    print('load_test: ok')


if __name__ == '__main__':
    sys.exit(main())
