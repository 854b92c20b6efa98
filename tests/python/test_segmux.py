#!/usr/bin/env python3
"""The Python module against `segmux track` on the fixture video: the same object ids and masks on every
frame. Runs with Debian's python3 + numpy only. Environment: PYTHONPATH (the folder holding segmux/),
SEGMUX_LIBRARY (optional: libsegmux to load), SEGMUX_BIN (the segmux command), SEGMUX_FIXTURES,
SEGMUX_TEST_CACHE (compiled-model cache). Exit status 0 when every check passes."""

import json
import os
import struct
import subprocess
import sys
import tempfile
import unittest
import zlib

import numpy as np

import segmux

FIXTURE = os.path.join(os.environ.get("SEGMUX_FIXTURES", "../shared/fixtures"), "sam31-tiny")
FRAMES = os.path.join(FIXTURE, "video", "frames")
CACHE = os.environ.get("SEGMUX_TEST_CACHE") or os.path.join(tempfile.gettempdir(), "segmux-python-test-cache")
SEGMUX_BIN = os.environ.get("SEGMUX_BIN", "segmux")
CONFIGS = tempfile.TemporaryDirectory(prefix="segmux-python-test-configs-")


def model_config(fixture_dir):
    """The fixture's config.json as the flat model config the library reads (`segmux fixture-config`)."""
    out = os.path.join(CONFIGS.name, os.path.basename(os.path.normpath(fixture_dir)) + ".json")
    subprocess.run([SEGMUX_BIN, "fixture-config", os.path.join(fixture_dir, "config.json"), "-o", out], check=True,
                   stdout=subprocess.DEVNULL)
    return out


MODEL = dict(checkpoint=os.path.join(FIXTURE, "weights.safetensors"), config=model_config(FIXTURE),
             vocab=os.path.join(FIXTURE, "tokenizer", "bpe_simple_vocab_16e6.txt.gz"))
IMAGE_SET = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "sam31-tiny-image")
IMAGE_MODEL = dict(checkpoint=os.path.join(IMAGE_SET, "weights.safetensors"),
                   config=model_config(IMAGE_SET),
                   vocab=os.path.join(IMAGE_SET, "tokenizer", "bpe_simple_vocab_16e6.txt.gz"))


def read_png_gray(path):
    """A grayscale PNG (8 or 16 bit, non-interlaced) as a numpy array: enough for the id masks."""
    return read_png(path, colors=(0,))


def read_png_rgb(path):
    """An 8-bit RGB or RGBA PNG (non-interlaced) as an H x W x 3 uint8 array, alpha dropped: the fixture
    frames."""
    return read_png(path, colors=(2, 6))


def read_png(path, colors):
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", path
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert color in colors and interlace == 0 and depth in (8, 16), (path, color, depth)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    channels = {0: 1, 2: 3, 6: 4}[color]
    bpp = depth // 8 * channels
    stride = width * bpp
    out = np.zeros((height, stride), np.uint8)
    prev = np.zeros(stride, np.int32)
    for y in range(height):
        ftype = raw[y * (stride + 1)]
        line = np.frombuffer(raw, np.uint8, stride, y * (stride + 1) + 1).astype(np.int32)
        cur = np.zeros(stride, np.int32)
        for x in range(stride):
            a = cur[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if ftype == 0:
                pred = 0
            elif ftype == 1:
                pred = a
            elif ftype == 2:
                pred = b
            elif ftype == 3:
                pred = (a + b) // 2
            else:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
            cur[x] = (line[x] + pred) & 0xFF
        out[y] = cur
        prev = cur
    if channels > 1:
        assert depth == 8, (path, depth)
        return np.ascontiguousarray(out.reshape(height, width, channels)[:, :, :3])
    if bpp == 2:
        return (out[:, 0::2].astype(np.uint32) << 8 | out[:, 1::2]).astype(np.uint16)
    return out


def id_image(frame):
    """The frame's objects as `segmux track` writes them: 0 background, obj_id + 1 elsewhere."""
    ids = np.zeros(frame.masks.shape[1:], np.uint16)
    for k, obj in enumerate(frame.obj_ids):
        ids[frame.masks[k]] = obj + 1
    return ids


class TrackParity(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        out = os.path.join(cls.tmp.name, "track")
        cmd = [os.environ.get("SEGMUX_BIN", "segmux"), "track", FRAMES, "--prompt", "shape", "--out", out,
               "--weights", MODEL["checkpoint"], "--config", MODEL["config"], "--vocab", MODEL["vocab"],
               "--cache-dir", CACHE, "--overlay", "none", "--quiet"]
        subprocess.run(cmd, check=True)
        cls.track_dir = out

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_version(self):
        out = subprocess.run([os.environ.get("SEGMUX_BIN", "segmux"), "--version"], check=True,
                             capture_output=True, text=True).stdout.strip()
        self.assertEqual(out, "segmux " + segmux.__version__)

    def test_same_ids_and_masks_as_segmux_track(self):
        with segmux.Model(cache_dir=CACHE, **MODEL) as model:
            with model.start_session(FRAMES) as session:
                self.assertEqual(session.num_frames, 16)
                first = session.add_prompt(frame_index=0, text="shape")
                self.assertEqual(first.frame_index, 0)
                frames = list(session.propagate(direction="forward"))
        self.assertEqual([f.frame_index for f in frames], list(range(16)))
        objects = 0
        for f in frames:
            n = len(f.obj_ids)
            self.assertEqual(f.obj_ids.dtype, np.int64)
            self.assertEqual(f.scores.shape, (n,))
            self.assertEqual(f.boxes_xywh.shape, (n, 4))
            self.assertEqual(f.masks.dtype, np.bool_)
            self.assertTrue((f.masks.sum(axis=0) <= 1).all())  # non-overlapping, as officially
            expected = read_png_gray(os.path.join(self.track_dir, "masks", "%05d.png" % f.frame_index))
            got = id_image(f)
            self.assertEqual((n,) + expected.shape, f.masks.shape)
            self.assertTrue(np.array_equal(expected, got), "frame %d: masks differ in %d pixels"
                            % (f.frame_index, int((expected != got).sum())))
            objects += int((np.unique(expected) > 0).sum())
        self.assertGreater(objects, 0)  # the comparison compared objects, not empty frames

    def test_stopping_early_and_errors(self):
        with segmux.Model(cache_dir=CACHE, **MODEL) as model:
            session = model.start_session(FRAMES)
            with self.assertRaises(segmux.SegmuxError) as e:
                next(session.propagate())  # no prompt yet
            self.assertIn("no prompt", str(e.exception))
            session.add_prompt(frame_index=0, text="shape")
            for f in session.propagate(direction="forward"):
                break  # the generator cancels the propagation
            self.assertEqual(f.frame_index, 0)
            self.assertFalse(session.remove_object(12345))
            session.close()
            with self.assertRaises(segmux.SegmuxError) as e:
                model.start_session(os.path.join(FIXTURE, "no-such-video.mp4"))
            self.assertIn("no-such-video.mp4", str(e.exception))
        with self.assertRaises(segmux.SegmuxError):
            segmux.Model(model_dir="/nonexistent/segmux-model")

    def test_precision_option(self):
        for bad in ("fp16", "BF16"):
            with self.assertRaises(segmux.SegmuxError) as e:
                segmux.Model(cache_dir=CACHE, precision=bad, **MODEL)
            self.assertIn("is not a precision: use fp32 or bf16", str(e.exception))
        with self.assertRaises(segmux.SegmuxError) as e:
            segmux.Model(model_dir="/nonexistent/segmux-model", precision="bf16")
        self.assertIn("options.precision is for a checkpoint", str(e.exception))
        lines = []
        with segmux.Model(cache_dir=CACHE, precision="bf16", log=lines.append, **MODEL) as model:
            session = model.start_session(FRAMES)
            session.add_prompt(frame_index=0, text="shape")
            frame = next(session.propagate(direction="forward"))
            self.assertEqual(frame.frame_index, 0)
            session.close()
        self.assertTrue(any("bf16" in line for line in lines) or not any("compiling" in l for l in lines), lines)

    def test_live_frames(self):
        # Frames from an iterable (a generator: no length known), each tracked as it arrives.
        with segmux.Model(cache_dir=CACHE, **MODEL) as model:
            stream = (np.full((48, 64, 3), 40 * i, np.uint8) for i in range(4))
            with model.start_session(stream, keep_frames=2) as session:
                session.add_prompt(frame_index=0, text="shape")
                seen = [f.frame_index for f in session.propagate()]
                self.assertEqual(seen, [0, 1, 2, 3])  # as from a folder: the prompted frame again, then on
                self.assertEqual(session.num_frames, 4)
                with self.assertRaises(segmux.SegmuxError) as e:
                    session.add_prompt(frame_index=0, text="shape")  # only the last 2 frames are held
                self.assertIn("no longer held", str(e.exception))


def same_frames(test, got, want, what):
    test.assertEqual([f.frame_index for f in got], [f.frame_index for f in want], what)
    for g, w in zip(got, want):
        test.assertEqual(list(g.obj_ids), list(w.obj_ids), f"{what}, frame {w.frame_index}")
        test.assertTrue(np.array_equal(g.scores, w.scores), f"{what}, frame {w.frame_index}: scores")
        test.assertTrue(np.array_equal(g.boxes_xywh, w.boxes_xywh), f"{what}, frame {w.frame_index}: boxes")
        test.assertTrue(np.array_equal(g.masks, w.masks), f"{what}, frame {w.frame_index}: masks")


class Sessions(unittest.TestCase):
    """One session type behind every front door (issue 21): frames from a list equal frames from a
    folder, sessions of one model interleave as if alone, clicks answer with the frame's other objects."""

    @classmethod
    def setUpClass(cls):
        cls.model = segmux.Model(cache_dir=CACHE, **MODEL)
        names = sorted(os.listdir(FRAMES))
        cls.frames = [read_png_rgb(os.path.join(FRAMES, n)) for n in names]

    @classmethod
    def tearDownClass(cls):
        cls.model.close()

    def run_session(self, resource, keep_frames=16, click=None):
        with self.model.start_session(resource, keep_frames=keep_frames) as session:
            first = session.add_prompt(frame_index=0, text="shape")
            frames = [first] + list(session.propagate(direction="forward"))
            if click is not None:
                frames.append(session.add_prompt(frame_index=6, points=[[0.6125, 0.375]], obj_id=click))
        return frames

    def test_a_list_of_frames_gives_what_the_folder_gives(self):
        want = self.run_session(FRAMES)
        self.assertGreater(sum(len(f.obj_ids) for f in want), 0)
        # Before: frame 0 never came, frame 1 had no object, new objects came two frames late.
        same_frames(self, self.run_session(list(self.frames), keep_frames=2), want, "list of frames")
        with self.model.start_session(tuple(self.frames)) as session:  # a video: every direction
            session.add_prompt(frame_index=5, text="shape")
            both = [f.frame_index for f in session.propagate()]
        self.assertEqual(sorted(both), list(range(16)))

    def test_a_stream_is_tracked_as_it_arrives(self):
        # Frames from a generator (a camera): each tracked as it arrives, the outputs released by the
        # hot-start rule as from a folder (the same frames, starting with the prompted one); two held.
        want = self.run_session(FRAMES)
        pulled = []

        def camera():
            for frame in self.frames:
                pulled.append(len(pulled))
                yield frame

        with self.model.start_session(camera(), keep_frames=2) as session:
            session.add_prompt(frame_index=0, text="shape")
            got = []
            for f in session.propagate(direction="forward"):
                got.append(f)
                if len(got) == 1:
                    self.assertEqual(len(pulled), 16)  # the hot-start rule held frame 0 back until then
        self.assertEqual([f.frame_index for f in got], [f.frame_index for f in want[1:]])
        self.assertGreater(len(got[1].obj_ids), 0)  # before: no object on frame 1

    def test_clicks_answer_with_the_frames_other_objects(self):
        want = self.run_session(FRAMES, click=2)
        shown = set(want[1 + 6].obj_ids) - {2}  # frame 6 of the propagation, but the clicked object
        self.assertTrue(shown)
        self.assertTrue(shown <= set(want[-1].obj_ids), (shown, list(want[-1].obj_ids)))
        same_frames(self, self.run_session(list(self.frames), click=2), want, "list of frames, click")

    def test_sessions_of_one_model_interleave_as_if_alone(self):
        want = self.run_session(FRAMES)
        a = self.model.start_session(FRAMES)
        b = self.model.start_session(list(self.frames))
        got_a, got_b = [a.add_prompt(frame_index=0, text="shape")], [b.add_prompt(frame_index=0, text="shape")]
        for fa, fb in zip(a.propagate(direction="forward"), b.propagate(direction="forward")):
            got_a.append(fa)
            got_b.append(fb)
        a.close()
        b.close()
        same_frames(self, got_a, want, "session a")
        same_frames(self, got_b, want, "session b")


class HostileInput(unittest.TestCase):
    """Every conversion to C is checked (issue 22): a clear exception, never a crash, a truncated or
    wrapped value, or a silently converted frame."""

    @classmethod
    def setUpClass(cls):
        cls.model = segmux.Model(cache_dir=CACHE, **MODEL)

    @classmethod
    def tearDownClass(cls):
        cls.model.close()

    def test_a_generator_resumed_after_close_raises(self):
        # In a child: before the fix this was a SIGSEGV of the interpreter.
        code = "\n".join([
            "import segmux, sys",
            f"model = segmux.Model(cache_dir={CACHE!r}, **{MODEL!r})",
            f"session = model.start_session({FRAMES!r})",
            "session.add_prompt(frame_index=0, text='shape')",
            "gen = session.propagate(direction='forward')",
            "next(gen)",
            "session.close()",
            "try:",
            "    next(gen)",
            "except segmux.InvalidArgumentError as e:",
            "    print('refused:', e)",
            "model.close()",
        ])
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("refused: the session is closed", r.stdout)

    def test_prompt_values_are_checked(self):
        with self.model.start_session(FRAMES) as session:
            bad = [
                (dict(points=[[0.5, 0.5], [0.2, 0.2]], point_labels=[1], obj_id=1), ValueError, "1 point_labels for 2"),
                (dict(points=[[0.5, 0.5]], point_labels=[2], obj_id=1), ValueError, "1 (positive) or 0"),
                (dict(points=[[0.5, 0.5]], point_labels=[2**32 + 1], obj_id=1), ValueError, "1 (positive) or 0"),
                (dict(points=[[0.5, float("nan")]], obj_id=1), ValueError, "finite"),
                (dict(points=[[0.5, 0.5, 0.5]], obj_id=1), ValueError, "N x 2"),
                (dict(points=[["a", "b"]], obj_id=1), TypeError, "numbers"),
                (dict(points=[[0.5, 0.5]], obj_id=2**64 + 1), ValueError, "out of range"),
                (dict(points=[[0.5, 0.5]], obj_id=-1), ValueError, "out of range"),
                (dict(points=[[0.5, 0.5]], obj_id=1.5), TypeError, "integer"),
                (dict(text="shape", frame_index=2**40), ValueError, "out of range"),
                (dict(text="shape", frame_index=16), ValueError, "not a frame of this video"),
                (dict(text="shape", frame_index=True), TypeError, "integer"),
                (dict(text=b"shape"), TypeError, "str"),
                (dict(text="sha\udcffpe"), ValueError, "UTF-8"),
                (dict(text="sha\0pe"), ValueError, "NUL"),
                (dict(boxes_xywh=[[0.1, 0.1, 0.2, 0.2]], box_labels=[1, 0]), ValueError, "2 box_labels for 1"),
            ]
            for kwargs, kind, words in bad:
                with self.assertRaises(kind, msg=kwargs) as e:
                    session.add_prompt(**kwargs)
                self.assertIn(words, str(e.exception), kwargs)
                if isinstance(e.exception, ValueError):
                    self.assertIsInstance(e.exception, segmux.Error)
            # Nothing refused stayed in the session: the text prompt then tracks as on a fresh session.
            first = session.add_prompt(frame_index=0, text="shape")
            self.assertGreater(len(first.obj_ids), 0)
            self.assertEqual(first.prompts, ["shape"] * len(first.obj_ids))
            self.assertEqual(first.obj_ids_by_prompt(), {"shape": first.obj_ids.tolist()})
            for kwargs in (dict(start_frame_index=2**40), dict(start_frame_index=100), dict(direction="sideways"),
                           dict(max_frame_num_to_track=-1)):
                with self.assertRaises(ValueError, msg=kwargs):
                    list(session.propagate(**kwargs))
            with self.assertRaises(ValueError):
                session.remove_object(2**63)
        with self.assertRaises(ValueError) as e:
            session.add_prompt(frame_index=0, text="shape")
        self.assertIn("closed", str(e.exception))

    def test_frames_and_paths_are_checked(self):
        for frame, kind, words in ((np.zeros((8, 8, 3), np.float32), TypeError, "uint8"),
                                   (np.zeros((8, 8), np.uint8), ValueError, "H x W x 3"),
                                   ([[1, 2, 3]], TypeError, "numpy array")):
            with self.model.start_session(iter([frame])) as session:
                with self.assertRaises(kind) as e:
                    session.add_prompt(frame_index=0, text="shape")
                self.assertIn(words, str(e.exception))
        with self.assertRaises(ValueError):
            self.model.start_session("frames\0.mp4")
        with self.assertRaises(TypeError):
            self.model.start_session(12)
        with self.assertRaises(ValueError):
            self.model.start_session(FRAMES, keep_frames=0)
        with self.assertRaises(segmux.NotFoundError) as e:
            self.model.start_session(os.fsencode(os.path.join(FIXTURE, "absent-")) + b"\xe9.mp4")  # Latin-1
        self.assertIsInstance(e.exception, FileNotFoundError)
        self.assertEqual(e.exception.status, "SEGMUX_ERROR_NOT_FOUND")


MASK_TRACE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "sam31-tiny-masks", "video",
                          "trace.json")


def rle_mask(rle):
    """COCO uncompressed RLE (column-major runs, 0s first) -> H x W bool."""
    h, w = rle["size"]
    flat = np.zeros(h * w, bool)
    pos, val = 0, False
    for c in rle["counts"]:
        flat[pos:pos + c] = val
        pos, val = pos + c, not val
    return flat.reshape(w, h).T


class MaskPrompts(unittest.TestCase):
    """session.add_prompt(obj_id=N, mask=array): the official trace of tests/fixtures/sam31-tiny-masks
    (its second session: a mask on frame 7, propagated both ways), and bad masks refused."""

    @unittest.skipUnless(os.path.exists(MASK_TRACE), "sam31-tiny-masks fixtures not found")
    def test_mask_prompt_matches_the_official_trace(self):
        with open(MASK_TRACE) as f:
            reqs = json.load(f)["requests"]
        add, prop = reqs[7], reqs[8]
        self.assertEqual((add["frame_index"], add["obj_id"], prop["propagation_direction"]), (7, 2, "both"))
        mask = rle_mask(add["object_mask"])
        with segmux.Model(cache_dir=CACHE, **MODEL) as model:
            with model.start_session(FRAMES) as session:
                bad = [
                    (dict(mask=mask.astype(np.uint8) * 3, obj_id=2), ValueError, "not binary"),
                    (dict(mask=np.zeros_like(mask), obj_id=2), ValueError, "no foreground pixel"),
                    (dict(mask=mask), ValueError, "needs obj_id"),
                    (dict(mask=mask, obj_id=2, text="shape"), ValueError, "one object"),
                    (dict(mask=mask[None], obj_id=2), ValueError, "H x W"),
                    (dict(mask=mask.tolist(), obj_id=2), TypeError, "numpy array"),
                    (dict(mask=mask, obj_id=2, frame_index=16), ValueError, "not a frame of this video"),
                ]
                for kwargs, kind, words in bad:
                    with self.assertRaises(kind, msg=list(kwargs)) as e:
                        session.add_prompt(**{"frame_index": 7, **kwargs})
                    self.assertIn(words, str(e.exception), list(kwargs))
                first = session.add_prompt(frame_index=7, obj_id=2, mask=mask)
                self.assertEqual(first.obj_ids.tolist(), add["outputs"]["obj_ids"])
                got = {f.frame_index: f for f in session.propagate(direction="both", start_frame_index=7)}
        want = {y["frame_index"]: y for y in prop["yields"]}
        self.assertEqual(sorted(got), sorted(want))
        for i, y in want.items():
            self.assertEqual(got[i].obj_ids.tolist(), y["obj_ids"], i)
            for k, rle in enumerate(y["masks_rle"]):
                a, b = got[i].masks[k].astype(bool), rle_mask(rle)
                iou = (a & b).sum() / max((a | b).sum(), 1)
                self.assertGreaterEqual(iou, 0.98, (i, k))


class ErrorClasses(unittest.TestCase):
    def test_each_status_has_its_exception(self):
        with tempfile.TemporaryDirectory() as tmp:
            png = os.path.join(tmp, "image.pt")
            with open(png, "wb") as f:
                f.write(b"\x89PNG\r\n\x1a\n" + bytes(64))
            with self.assertRaises(segmux.CorruptFileError) as e:
                segmux.Model(checkpoint=png, cache_dir=tmp)
            self.assertIn("a PNG image", str(e.exception))
            with self.assertRaises(segmux.NotFoundError):
                segmux.Model(checkpoint=os.path.join(tmp, "absent.pt"), cache_dir=tmp)
            with self.assertRaises(segmux.InvalidArgumentError):
                segmux.Model(checkpoint=png, precision="fp16")
            with self.assertRaises(TypeError):
                segmux.Model(checkpoint=png, num_threads="4")
        with segmux.Model(cache_dir=CACHE, **MODEL) as model:
            session = model.start_session(FRAMES)
            model.start_session(FRAMES).close()  # several sessions per model (issue 21)
            model.segment(np.zeros((32, 32, 3), np.uint8), text="shape")  # an image beside the open session
            session.close()


class Images(unittest.TestCase):
    """Model.segment against `segmux segment` (the official image processor) on the image fixture."""

    def test_same_objects_as_segmux_segment(self):
        image = os.path.join(IMAGE_SET, "images", "frame00.png")
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "out")
            subprocess.run([SEGMUX_BIN, "segment", image, "--prompt", "shape", "--box", "133,54,60,50",
                            "--out", out, "--weights", IMAGE_MODEL["checkpoint"], "--config", IMAGE_MODEL["config"],
                            "--vocab", IMAGE_MODEL["vocab"], "--cache-dir", CACHE, "-q"], check=True)
            with open(os.path.join(out, "frame00.json")) as f:
                expected = json.load(f)
        w, h = expected["width"], expected["height"]
        box = [133 / w, 54 / h, 60 / w, 50 / h]
        with segmux.Model(cache_dir=CACHE, **IMAGE_MODEL) as model:
            got = model.segment(image, text="shape", boxes_xywh=[box])
            rgb = read_png_rgb(image)
            again = model.segment(rgb, text=["shape"], boxes_xywh=[box], box_labels=[1])
        objects = expected["objects"]
        self.assertGreater(len(objects), 0)
        self.assertEqual(got.obj_ids.tolist(), [o["id"] for o in objects])
        self.assertEqual(got.prompts, [o["prompt"] for o in objects])
        self.assertEqual(got.masks.shape, (len(objects), h, w))
        for k, o in enumerate(objects):
            self.assertAlmostEqual(float(got.scores[k]), o["score"], delta=1e-4)
            self.assertEqual(int(got.masks[k].sum()), o["area"])
            np.testing.assert_allclose(got.boxes_xywh[k], o["box_xywh"], atol=2e-5)
        self.assertEqual(again.obj_ids.tolist(), got.obj_ids.tolist())
        np.testing.assert_array_equal(again.masks, got.masks)


class ImagePredictor(unittest.TestCase):
    """Model.predict / image_predictor (the official SAM-1-style predict) against the official scores of
    tests/fixtures/sam31-tiny-sam1 and against `segmux segment --point`; logits fed back; bad input."""

    SET = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "sam31-tiny-sam1")

    def official(self, name):
        with open(os.path.join(self.SET, "cases.json")) as f:
            return next(c for c in json.load(f)["cases"] if c["name"] == name)

    def test_predict_equals_the_official_and_segmux_segment(self):
        image = os.path.join(self.SET, "images", "frame00.png")
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "out")
            logits = os.path.join(tmp, "low.npy")
            subprocess.run([SEGMUX_BIN, "segment", image, "--point", "163,79", "--multimask", "--out", out,
                            "--logits-out", logits, "--weights", IMAGE_MODEL["checkpoint"], "--config",
                            IMAGE_MODEL["config"], "--vocab", IMAGE_MODEL["vocab"], "--cache-dir", CACHE, "-q"],
                           check=True)
            with open(os.path.join(out, "frame00.json")) as f:
                cli = json.load(f)
            cli_low = np.load(logits)
        with segmux.Model(cache_dir=CACHE, **IMAGE_MODEL) as model:
            masks, scores, low = model.predict(image, point_coords=[[163, 79]], point_labels=[1])
            ref = self.official("frame00_point_multimask")
            np.testing.assert_allclose(scores, ref["scores"], atol=2e-4)
            self.assertEqual(masks.shape, (3, 240, 320))
            self.assertEqual(masks.dtype, bool)
            self.assertEqual([int(m.sum()) for m in masks], [c["area"] for c in cli["candidates"]])
            np.testing.assert_array_equal(low, cli_low)
            with model.image_predictor(read_png_rgb(image)) as p:
                best = low[np.argmax(scores)][None, :, :]
                m2, s2, _ = p.predict(point_coords=np.array([[163, 79], [150, 60]]), point_labels=np.array([1, 1]),
                                      mask_input=best, multimask_output=False)
                ref2 = self.official("frame00_refine_mask_input")
                np.testing.assert_allclose(s2, ref2["scores"], atol=2e-4)
                self.assertEqual(m2.shape, (1, 240, 320))
                lg, _, _ = p.predict(box=[95, 97, 222, 210], multimask_output=False, return_logits=True)
                self.assertEqual(lg.dtype, np.float32)
                beside = model.segment(image, text="shape")  # the open predictor does not hold the model
                with self.assertRaises(segmux.InvalidArgumentError):
                    p.predict(point_coords=[[10, 10]], point_labels=[1, 0])
                with self.assertRaises(segmux.InvalidArgumentError):
                    p.predict(box=[0, 0, 999, 10])
                with self.assertRaises(segmux.InvalidArgumentError):
                    p.predict(point_coords=[[10, 10]], point_labels=[1], mask_input=np.zeros((1, 7, 7), np.float32))
            again = model.segment(image, text="shape")  # closed: the model is free again
            self.assertGreaterEqual(len(again.obj_ids), 0)


class SharedCache(unittest.TestCase):
    def test_the_module_uses_what_segmux_compiled(self):
        # Issue 24: the key held the running binary's identity, so libsegmux compiled its own entry.
        with tempfile.TemporaryDirectory() as cache:
            with tempfile.TemporaryDirectory() as out:
                subprocess.run([SEGMUX_BIN, "segment", os.path.join(FRAMES, "00000.png"), "--prompt", "shape",
                                "--out", out, "--weights", MODEL["checkpoint"], "--config", MODEL["config"],
                                "--vocab", MODEL["vocab"], "--cache-dir", cache, "-q"], check=True)
            lines = []
            with segmux.Model(cache_dir=cache, log=lines.append, **MODEL):
                pass
            self.assertFalse(any("first use" in line for line in lines), lines)
            self.assertTrue(any("using compiled candidates cached in" in line for line in lines), lines)



if __name__ == "__main__":
    unittest.main(verbosity=2)
