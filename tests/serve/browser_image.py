"""The image predictor on the page of `segmux serve` (issue 25 item 2; test_browser.py drives the
browser): a person uploads an image, clicks the object with the mouse, sees the candidate masks with
their scores, picks one, and clicks again: the page sends predict_image with every click so far and the
picked candidate's low-res logits as mask_input, as the official sam3_for_sam1_task notebook does.

The image and clicks are those of the official goldens tests/fixtures/sam31-tiny-sam1 (same tiny model
as the server's): the first click's three candidates and the refinement fed with the best one's logits
must give the official scores and mask areas (scores within the C API test's 2e-4, areas within the
parity tests' mask IoU of 0.999)."""
import json
import os

from serve_util import check
from browser_clicks import mouse, state, wait_until
from browser_masks import set_file

SAM1 = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'fixtures', 'sam31-tiny-sam1'))


def official(name):
    cases = {c['name']: c for c in json.load(open(os.path.join(SAM1, 'cases.json')))['cases']}
    return list(zip(cases[name]['scores'], cases[name]['mask_areas']))


def image_rect(dt):
    dt.eval('document.getElementById("image-stage").scrollIntoView({block: "center"})')
    return dt.eval('(() => { const r = document.getElementById("image-overlay").getBoundingClientRect();'
                   ' return [r.left, r.top, r.width, r.height]; })()')


def css_of(dt, size, px, py):
    left, top, width, height = image_rect(dt)
    return left + px / size[0] * width, top + py / size[1] * height


def click(dt, size, px, py, shift=False):
    x, y = css_of(dt, size, px, py)
    mods = 8 if shift else 0
    mouse(dt, 'mouseMoved', x, y, mods)
    mouse(dt, 'mousePressed', x, y, mods, pressed=True)
    mouse(dt, 'mouseReleased', x, y, mods)


def predicted(dt, before, where):
    return wait_until(dt, lambda s: s['image_predictor']['done'] > before['image_predictor']['done'] and
                      s['status'] == 'image-predicted', where)


def check_official(got, want, where):
    check(len(got) == len(want) and
          all(abs(g['score'] - w[0]) < 2e-4 and abs(g['area'] - w[1]) <= 1e-3 * max(g['area'], w[1])
              for g, w in zip(got, want)), '%s: candidates %s, official (score, area) %s' % (where, got, want))


def click_and_refine(dt):
    set_file(dt, '#image-upload', os.path.join(SAM1, 'images', 'frame00.png'))
    s = wait_until(dt, lambda s: s['status'] == 'image-ready', 'the uploaded image')
    ip = s['image_predictor']
    size = (ip['width'], ip['height'])
    check(size == (320, 240) and ip['resource'].startswith('upload:'), 'uploaded image: %s' % ip)

    # 1. A click on the object: three candidates with their scores, listed; the best is picked.
    click(dt, size, 163, 79)
    s = predicted(dt, s, 'the first click')
    ip = s['image_predictor']
    req = ip['last_request']
    check(req['point_coords'] == [[163, 79]] and req['point_labels'] == [1] and req['multimask_output'] and
          req['mask_input'] is None, 'first request: %s' % req)
    check_official(ip['candidates'], official('frame00_point_multimask'), 'first click')
    check(ip['picked'] == ip['best'] == 2 and len(ip['listed']) == 3 and
          ip['listed'][2].startswith('candidate 2: score 0.0450') and ip['listed'][2].endswith('(best)'),
          'candidate list: %s' % ip['listed'])

    # 2. The person picks another candidate, then the best again (the notebook's argmax).
    dt.eval('document.querySelector(\'#candidates li[data-index="0"] button.pick\').click()')
    s = wait_until(dt, lambda s: s['image_predictor']['picked'] == 0 and s['status'] == 'image-picked', 'pick 0')
    dt.eval('document.querySelector(\'#candidates li[data-index="2"] button.pick\').click()')
    s = wait_until(dt, lambda s: s['image_predictor']['picked'] == 2, 'pick 2')

    # 3. One mask this time, a second click: both clicks and candidate 2's logits as mask_input give
    #    the official refinement.
    dt.eval('document.getElementById("image-multimask").click()')
    click(dt, size, 150, 60)
    s = predicted(dt, s, 'the refining click')
    ip = s['image_predictor']
    req = ip['last_request']
    check(req['point_coords'] == [[163, 79], [150, 60]] and req['point_labels'] == [1, 1] and
          not req['multimask_output'] and req['mask_input_from'] == {'answer': 1, 'candidate': 2} and
          req['mask_input'][0] == req['mask_input'][1] > 0, 'refining request: %s' % req)
    check_official(ip['candidates'], official('frame00_refine_mask_input'), 'refining click')
    refined = ip['candidates'][0]

    # 4. Several candidates again; a shift-click is a background point, a drag the box; each refines
    #    the candidate picked last.
    dt.eval('document.getElementById("image-multimask").click()')
    click(dt, size, 120, 150, shift=True)
    s = predicted(dt, s, 'the background click')
    ip = s['image_predictor']
    req = ip['last_request']
    check(req['point_labels'] == [1, 1, 0] and req['multimask_output'] and len(ip['candidates']) == 3 and
          req['mask_input_from'] == {'answer': 2, 'candidate': 0}, 'background click: %s / %s' % (req, ip))
    a, b = css_of(dt, size, 95, 97), css_of(dt, size, 222, 210)
    mouse(dt, 'mouseMoved', *a)
    mouse(dt, 'mousePressed', *a, pressed=True)
    for k in range(1, 6):
        mouse(dt, 'mouseMoved', a[0] + (b[0] - a[0]) * k / 5, a[1] + (b[1] - a[1]) * k / 5, pressed=True)
    mouse(dt, 'mouseReleased', *b)
    s = predicted(dt, s, 'the dragged box')
    req = s['image_predictor']['last_request']
    check(req['box'] == [95, 97, 222, 210] and len(req['point_coords']) == 3, 'box request: %s' % req)
    print('browser image predictor: 3 candidates at the official scores, picked 0 then 2, refined with its logits to '
          'score %.4f / %d px (official %.4f / %d), then a background click and a box: %d predictions' %
          (refined['score'], refined['area'], *official('frame00_refine_mask_input')[0], s['image_predictor']['done']))
