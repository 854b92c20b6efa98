#!/usr/bin/env python3
"""The Python module against `segmux track` on the fixture video: the same object ids and masks on every
frame. Runs with Debian's python3 + numpy only. Environment: PYTHONPATH (the folder holding segmux/),
SEGMUX_LIBRARY (optional: libsegmux to load), SEGMUX_BIN (the segmux command), SEGMUX_FIXTURES,
SEGMUX_TEST_CACHE (compiled-model cache). Exit status 0 when every check passes."""

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
MODEL = dict(checkpoint=os.path.join(FIXTURE, "weights.safetensors"), config=os.path.join(FIXTURE, "config.json"),
             vocab=os.path.join(FIXTURE, "tokenizer", "bpe_simple_vocab_16e6.txt.gz"))
CACHE = os.environ.get("SEGMUX_TEST_CACHE") or os.path.join(tempfile.gettempdir(), "segmux-python-test-cache")


def read_png_gray(path):
    """A grayscale PNG (8 or 16 bit, non-interlaced) as a numpy array: enough for the id masks."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", path
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert color == 0 and interlace == 0 and depth in (8, 16), (path, color, depth)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    bpp = depth // 8
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
            with self.assertRaises(segmux.SegmuxError) as e:
                model.start_session(FRAMES)  # one session per model
            self.assertEqual(e.exception.status, "SEGMUX_ERROR_BUSY")
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
                self.assertEqual(seen, [1, 2, 3])
                self.assertEqual(session.num_frames, 4)
                with self.assertRaises(segmux.SegmuxError) as e:
                    session.add_prompt(frame_index=0, text="shape")  # only the last 2 frames are held
                self.assertIn("no longer held", str(e.exception))


if __name__ == "__main__":
    unittest.main(verbosity=2)
