"""Mask prompts on the page of `segmux serve` (issue 25 item 1; test_browser.py drives the browser):
a mask painted on the frame with real mouse events and a PNG mask uploaded through the file input
(DevTools DOM.setFileInputFiles) reach the server as add_prompt with "object_mask" (COCO uncompressed
RLE at the painted / uploaded size), and the answer shows the object's mask (empty, as officially, for
the first prompt on a frame nothing has answered yet); a PNG that is not black / white is refused on
the page, naming the pixel, and changes nothing."""
import os
import struct
import zlib

from serve_util import check
from browser_clicks import canvas_rect, mouse, open_video, state, wait_until


def write_png_rgb(path, width, height, pixel):
    """An 8-bit RGB PNG whose pixel (x, y) is pixel(x, y) -> (r, g, b)."""
    raw = b''.join(b'\x00' + b''.join(bytes(pixel(x, y)) for x in range(width)) for y in range(height))

    def chunk(kind, data):
        return struct.pack('>I', len(data)) + kind + data + struct.pack('>I', zlib.crc32(kind + data) & 0xffffffff)

    with open(path, 'wb') as f:
        f.write(b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', width, height, 8, 2, 0, 0, 0)) +
                chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b''))


def rle_area(rle):
    return sum(rle['counts'][1::2])


def answered(dt, before, where):
    return wait_until(dt, lambda s: s['clicks_done'] > before['clicks_done'] and s['status'] == 'clicked', where)


def set_file(dt, selector, path):
    doc = dt.call('DOM.getDocument')
    node = dt.call('DOM.querySelector', nodeId=doc['root']['nodeId'], selector=selector)
    dt.call('DOM.setFileInputFiles', nodeId=node['nodeId'], files=[path])


def paint_and_upload(dt, srv, root):
    s = open_video(dt, srv, 'frames')
    size = (s['width'], s['height'])
    check(s['objects'] == [] and s['new_obj_id'] == 0, 'fresh session: %s' % s)

    # 1. Upload a PNG at half the video size (the server resizes it) for a new object: object 0. As
    #    officially, the answer on a frame nothing has answered yet is empty (the object is listed).
    half = os.path.join(root, 'half_mask.png')
    write_png_rgb(half, size[0] // 2, size[1] // 2, lambda x, y: (255,) * 3 if 30 <= x < 62 and 65 <= y < 97 else (0,) * 3)
    before = state(dt)
    set_file(dt, '#mask-upload', half)
    s = answered(dt, before, 'the uploaded mask')
    req = s['last_request']
    check(req['type'] == 'add_prompt' and req['obj_id'] == 0 and req['frame_index'] == 0 and
          req['object_mask']['size'] == [size[1] // 2, size[0] // 2] and rle_area(req['object_mask']) == 32 * 32,
          'uploaded mask request: obj %s size %s area %d' % (req['obj_id'], req['object_mask']['size'],
                                                              rle_area(req['object_mask'])))
    check(s['objects'] == [0] and s['current_ids'] == [], 'after the upload: %s' % s)

    # 2. Paint a stroke over the red disc of frame 0 (video pixels 105..135 at y 70) for a new object,
    #    then send it: object 1, whose mask in the answer is exactly the painted one (official
    #    add_new_masks: the mask at the video size is the output).
    dt.eval('(() => { const sel = document.getElementById("click-object"); sel.value = "new";'
            ' sel.dispatchEvent(new Event("change")); })()')
    dt.eval('document.getElementById("paint-mode").click()')
    left, top, width, height = canvas_rect(dt)
    css = lambda px, py: (left + px / size[0] * width, top + py / size[1] * height)
    x0, y0 = css(105, 70)
    mouse(dt, 'mouseMoved', x0, y0)
    mouse(dt, 'mousePressed', x0, y0, pressed=True)
    for k in range(1, 7):
        mouse(dt, 'mouseMoved', *css(105 + 5 * k, 70), pressed=True)
    mouse(dt, 'mouseReleased', *css(135, 70))
    s = wait_until(dt, lambda s: s['painted_pixels'] > 0, 'the painted stroke')
    painted = s['painted_pixels']
    check(painted > 200, 'a 30 px stroke with a 12 px brush paints more than 200 pixels: %d' % painted)
    dt.eval('document.getElementById("send-paint").click()')
    s = answered(dt, s, 'the painted mask')
    req = s['last_request']
    check(req['obj_id'] == 1 and req['frame_index'] == 0 and req['object_mask']['size'] == [size[1], size[0]],
          'painted mask request: obj %s frame %s size %s' % (req['obj_id'], req['frame_index'],
                                                             req['object_mask']['size']))
    check(rle_area(req['object_mask']) == painted, 'RLE area %d, painted %d' % (rle_area(req['object_mask']), painted))
    check(s['current_ids'] == [1] and s['objects'] == [0, 1], 'after the painted mask: %s' % s)
    check(s['current_areas'] == [painted], 'mask area %s, painted %d' % (s['current_areas'], painted))
    check(s['painted_pixels'] == 0, 'the paint layer is cleared once sent: %d' % s['painted_pixels'])
    dt.eval('document.getElementById("paint-mode").click()')

    # 3. A grey PNG is refused on the page, naming the pixel; nothing is sent.
    grey = os.path.join(root, 'grey_mask.png')
    write_png_rgb(grey, 8, 8, lambda x, y: (128, 128, 128) if (x, y) == (3, 2) else (0, 0, 0))
    before = state(dt)
    set_file(dt, '#mask-upload', grey)
    s = wait_until(dt, lambda s: s['status'] == 'error', 'the refused upload', allow_error=True)
    check('grey_mask.png is not a binary mask: pixel (3, 2) is (128, 128, 128)' in s['error'], 'error %s' % s['error'])
    check(s['clicks_done'] == before['clicks_done'] and s['current_ids'] == [1], 'a refused mask changed %s' % s)
    print('browser masks: uploaded %dx%d -> object 0, painted %d px -> object 1, grey PNG refused' %
          (size[0] // 2, size[1] // 2, painted))
