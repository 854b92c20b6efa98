"""`segmux serve` over HTTP on 127.0.0.1 (ephemeral port), the fixtures' tiny model: the official request
flow answers as the official predictor's trace and as `segmux track`; every bad request gets a 4xx JSON
error and changes nothing; a client that disconnects mid-propagation leaves the session usable; the
token, the loopback rule and idle expiry hold. Usage: test_http.py (SEGMUX, SEGMUX_FIXTURES in env)."""
import json
import os
import subprocess
import sys
import tempfile
import time

OCTETS = {'Content-Type': 'application/octet-stream'}  # (httplib caps form-encoded bodies at 8 KiB)

from serve_util import SEGMUX, TINY, CACHE, Server, allowed_dir, check, expect_like_trace, load_trace


def flow_matches_trace_and_track(srv, root, trace):
    sid = srv.request({'type': 'start_session', 'resource_path': 'frames'})['session_id']
    first = srv.request({'type': 'add_prompt', 'session_id': sid, 'frame_index': trace['add_prompt'].get('frame_index', 0),
                         'text': trace['prompt']})
    expect_like_trace(first, trace['add_prompt']['outputs'], 'add_prompt')
    lines = srv.stream({'type': 'propagate_in_video', 'session_id': sid, 'propagation_direction': 'forward'})
    refs = {f['frame_index']: f for f in trace['outputs']}
    check(sorted(l['frame_index'] for l in lines) == sorted(refs), 'streamed frames %s' % [l['frame_index'] for l in lines])
    for line in lines:
        expect_like_trace(line, refs[line['frame_index']], 'frame %d' % line['frame_index'])
    # The same masks, bit for bit, as `segmux track` writes (and /api/export gives its format).
    out = os.path.join(root, 'track_out')
    subprocess.run([SEGMUX, 'track', os.path.join(TINY, 'video/frames'), '--prompt', trace['prompt'], '--weights',
                    os.path.join(TINY, 'weights.safetensors'), '--config', os.path.join(TINY, 'config.json'), '--vocab',
                    os.path.join(TINY, 'tokenizer/bpe_simple_vocab_16e6.txt.gz'), '--cache-dir', CACHE, '--out', out,
                    '--overlay', 'none', '--masks', 'none', '-q'], check=True, timeout=600)
    with open(os.path.join(out, 'tracks.json')) as f:
        track = {fr['frame_index']: fr for fr in json.load(f)['frames']}
    for line in lines:
        want = track[line['frame_index']]['objects']
        check(line['outputs']['out_obj_ids'] == [o['id'] for o in want], 'frame %d: ids differ from segmux track' % line['frame_index'])
        check([m['counts'] for m in line['outputs']['out_binary_masks']] == [o['mask_rle']['counts'] for o in want],
              'frame %d: masks differ from segmux track' % line['frame_index'])
    status, exported, _ = srv.call('GET', '/api/export?session_id=%s&what=tracks' % sid)
    check(status == 200 and exported['format'] == 'segmux-tracks-2', 'export: %s' % status)
    check([fr['objects'] for fr in exported['frames']] == [track[i]['objects'] for i in sorted(track)],
          'exported tracks.json objects differ from segmux track')
    status, overlay, hdrs = srv.call('GET', '/api/export?session_id=%s&what=overlay' % sid)
    check(status == 200 and len(overlay) > 1000, 'overlay export: %s %d bytes' % (status, len(overlay)))
    status, png, _ = srv.call('GET', '/api/frame?session_id=%s&index=3' % sid)
    check(status == 200 and png[:8] == b'\x89PNG\r\n\x1a\n', 'frame preview')
    srv.request({'type': 'close_session', 'session_id': sid})
    srv.request({'type': 'close_session', 'session_id': sid})  # idempotent, as officially
    print('flow: %d frames match the trace and segmux track' % len(lines))


def bad_requests(srv):
    sid = srv.request({'type': 'start_session', 'resource_path': 'frames'})['session_id']
    cases = [
        (b'{"type": ', 400, 'JSON'),
        ([1, 2], 400, 'object'),
        ({'type': 'make_coffee'}, 400, "unknown request type 'make_coffee'"),
        ({'type': 'add_prompt', 'session_id': 'nope', 'frame_index': 0, 'text': 'x'}, 404, "no session 'nope'"),
        ({'type': 'add_prompt', 'session_id': sid, 'frame_index': 16, 'text': 'x'}, 400, 'out of range'),
        ({'type': 'add_prompt', 'session_id': sid, 'frame_index': 0, 'points': [[1.5, 0.2]], 'point_labels': [1],
          'obj_id': 0}, 400, '[0, 1]'),
        ({'type': 'add_prompt', 'session_id': sid, 'frame_index': 0, 'points': [[0.5, 0.2]],
          'obj_id': 0}, 400, "'points' need 'point_labels'"),
        ({'type': 'add_prompt', 'session_id': sid, 'frame_index': 0, 'text': 'x', 'colour': 1}, 400, "unknown field 'colour'"),
        ({'type': 'propagate_in_video', 'session_id': sid}, 400, 'no prompt'),
        ({'type': 'start_session', 'resource_path': '../outside/secret.gif'}, 403, 'outside the allowed folder'),
        ({'type': 'start_session', 'resource_path': '/etc/passwd'}, 403, 'outside the allowed folder'),
        ({'type': 'start_session', 'resource_path': 'escape.gif'}, 403, 'symlink'),
        ({'type': 'start_session', 'resource_path': 'nothing.mp4'}, 404, 'does not exist'),
    ]
    for body, want, words in cases:
        status, j, hdrs = srv.call('POST', '/api/request', body)
        check(status == want and isinstance(j, dict) and words in j.get('error', ''),
              '%s: got %s %s, expected %s with %r' % (body, status, j, want, words))
    status, j, _ = srv.call('POST', '/api/request', b'{"type":"reset_session","session_id":"' + b'x' * 2500000 + b'"}',
                            {'Content-Type': 'application/json'})
    check(status == 413, 'a body over --max-body-bytes: %s' % status)
    status, j, _ = srv.call('POST', '/api/upload?filename=a.exe', b'MZ', OCTETS)
    check(status == 400 and 'not a video' in j['error'], 'upload of an .exe: %s %s' % (status, j))
    with open(os.path.join(TINY, 'video/video.gif'), 'rb') as f:
        gif = f.read()
    status, up, _ = srv.call('POST', '/api/upload?filename=clip.gif', gif, OCTETS)
    check(status == 200 and up['resource_path'].startswith('upload:'), 'raw upload: %s %s' % (status, up))
    boundary = 'segmuxboundary'
    form = (b'--' + boundary.encode() + b'\r\nContent-Disposition: form-data; name="file"; filename="c.gif"\r\n'
            b'Content-Type: image/gif\r\n\r\n' + gif + b'\r\n--' + boundary.encode() + b'--\r\n')
    status, up2, _ = srv.call('POST', '/api/upload', form, {'Content-Type': 'multipart/form-data; boundary=' + boundary})
    check(status == 200, 'multipart upload: %s %s' % (status, up2))
    sid2 = srv.request({'type': 'start_session', 'resource_path': up2['resource_path']})['session_id']
    srv.request({'type': 'start_session', 'resource_path': 'frames'}, expect=429)  # --max-sessions 2
    # Nothing changed: the first session answers as before.
    first = srv.request({'type': 'add_prompt', 'session_id': sid, 'frame_index': 0, 'text': 'shape'})
    expect_like_trace(first, load_trace()['add_prompt']['outputs'], 'after the bad requests')
    status, m, _ = srv.call('GET', '/metrics')
    check(status == 200 and m['sessions'] == 2, 'metrics: %s' % m)
    for s in (sid, sid2):
        srv.request({'type': 'close_session', 'session_id': s})
    print('bad requests: %d refused with the expected 4xx' % (len(cases) + 3))


def disconnect_mid_propagation(srv, trace):
    sid = srv.request({'type': 'start_session', 'resource_path': 'frames'})['session_id']
    srv.request({'type': 'add_prompt', 'session_id': sid, 'frame_index': 0, 'text': trace['prompt']})
    got = srv.stream({'type': 'propagate_in_video', 'session_id': sid}, max_lines=2)
    check(len(got) == 2, 'two lines before the disconnect')
    # The server notices on its next write and releases the model: the session answers again (bounded wait).
    deadline, lines = time.time() + 60, None
    while time.time() < deadline:
        status, j, _ = srv.call('POST', '/api/request', {'type': 'reset_session', 'session_id': sid})
        if status == 200:
            break
        check(status == 503, 'reset after a disconnect: %s %s' % (status, j))
        time.sleep(0.2)
    srv.request({'type': 'add_prompt', 'session_id': sid, 'frame_index': 0, 'text': trace['prompt']})
    lines = srv.stream({'type': 'propagate_in_video', 'session_id': sid, 'propagation_direction': 'forward'})
    refs = {f['frame_index']: f for f in trace['outputs']}
    for line in lines:
        expect_like_trace(line, refs[line['frame_index']], 'after a disconnect, frame %d' % line['frame_index'])
    check(len(lines) == len(refs), 'after a disconnect: %d frames' % len(lines))
    # cancel_propagation from a second connection stops a stream.
    srv.request({'type': 'close_session', 'session_id': sid})
    status, m, _ = srv.call('GET', '/metrics')
    check(m['sessions'] == 0, 'sessions after close: %s' % m)
    print('disconnect: session usable afterwards, %d frames match the trace' % len(lines))


def token_loopback_expiry(root, allow):
    r = subprocess.run([SEGMUX, 'serve', '--host', '0.0.0.0', '--port', '0', '--weights',
                        os.path.join(TINY, 'weights.safetensors')], capture_output=True, text=True, timeout=60)
    check(r.returncode == 2 and 'needs --token' in r.stderr, 'non-loopback host without a token: %s %s' % (r.returncode, r.stderr))
    srv = Server('--token', 's3cret', '--allow-dir', allow, '--session-timeout', '1')
    try:
        status, j, _ = srv.call('POST', '/api/request', {'type': 'start_session', 'resource_path': 'frames'})
        check(status == 401 and 'bearer token' in j['error'], 'no token: %s' % status)
        status, _, _ = srv.call('GET', '/healthz')
        check(status == 200, 'healthz needs no token')
        srv.token = 'wrong'
        check(srv.call('GET', '/metrics')[0] == 401, 'wrong token')
        srv.token = 's3cret'
        srv.request({'type': 'start_session', 'resource_path': 'frames'})
        deadline = time.time() + 30
        m = None
        while time.time() < deadline:
            m = srv.call('GET', '/metrics')[1]
            if m['sessions'] == 0:
                break
            time.sleep(0.5)
        check(m['sessions'] == 0 and m['sessions_expired'] == 1, 'idle expiry: %s' % m)
    finally:
        check(srv.stop() == 0, 'server exit status on SIGTERM')
    print('token, loopback rule and idle expiry: ok')


def main():
    trace = load_trace()
    with tempfile.TemporaryDirectory(prefix='segmux-serve-http-') as root:
        allow = allowed_dir(root)
        tmp = os.path.join(root, 'tmp')  # the server's TMPDIR: its upload folder must be gone at exit
        os.makedirs(tmp)
        srv = Server('--allow-dir', allow, '--max-sessions', '2', '--max-body-bytes', '2000000', env={'TMPDIR': tmp})
        try:
            flow_matches_trace_and_track(srv, root, trace)
            bad_requests(srv)
            check(any(n.startswith('segmux-serve-') for n in os.listdir(tmp)), 'no upload folder in TMPDIR')
            disconnect_mid_propagation(srv, trace)
        finally:
            code = srv.stop()
        check(code == 0, 'server exit status %s' % code)
        check(os.listdir(tmp) == [], 'left in TMPDIR after exit: %s' % os.listdir(tmp))
        token_loopback_expiry(root, allow)
    print('test_http: ok')


if __name__ == '__main__':
    sys.exit(main())
