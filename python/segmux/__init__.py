"""segmux: SAM 3.1 text-prompted video segmentation and tracking (Python over the C API, docs/python.md).

    import segmux
    model = segmux.Model(model_dir="model/")               # or checkpoint=..., config=..., vocab=...
    with model.start_session("video.mp4") as session:      # a video file, a frame folder, or frames
        first = session.add_prompt(frame_index=0, text="person")
        for frame in session.propagate():
            frame.frame_index, frame.obj_ids, frame.scores, frame.boxes_xywh, frame.masks

Needs only Python 3 and numpy; libsegmux does the work (one model serves one session at a time).
"""

import ctypes
import os

import numpy as np

from . import _capi

_lib = _capi.load()

__version__ = _lib.segmux_version().decode()
__all__ = ["Model", "Session", "Frame", "SegmuxError", "__version__"]

_DIRECTIONS = {"both": _capi.BOTH, "forward": _capi.FORWARD, "backward": _capi.BACKWARD}


class SegmuxError(RuntimeError):
    """A failed segmux call; .status is the C API's status name (e.g. "SEGMUX_ERROR_FAILED")."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


def _check(status):
    if status < 0:
        raise SegmuxError(_lib.segmux_status_name(status).decode(), _lib.segmux_last_error().decode())
    return status


def _bytes(value):
    return None if value is None else os.fsencode(value)


class Frame:
    """The outputs of one frame (the official predictor's per-frame outputs, as numpy arrays):
    obj_ids int64 (N,), scores float32 (N,) (the detection score that created each object, official
    out_probs), boxes_xywh float32 (N, 4) normalised, masks bool (N, H, W) at the video's size."""

    __slots__ = ("frame_index", "obj_ids", "scores", "boxes_xywh", "masks")

    def __init__(self, handle):
        n = _lib.segmux_frame_num_objects(handle)
        h, w = _lib.segmux_frame_height(handle), _lib.segmux_frame_width(handle)
        self.frame_index = _lib.segmux_frame_index(handle)
        if n:
            self.obj_ids = np.ctypeslib.as_array(_lib.segmux_frame_obj_ids(handle), shape=(n,)).copy()
            self.scores = np.ctypeslib.as_array(_lib.segmux_frame_scores(handle), shape=(n,)).copy()
            self.boxes_xywh = np.ctypeslib.as_array(_lib.segmux_frame_boxes_xywh(handle), shape=(n, 4)).copy()
        else:
            self.obj_ids = np.zeros((0,), np.int64)
            self.scores = np.zeros((0,), np.float32)
            self.boxes_xywh = np.zeros((0, 4), np.float32)
        self.masks = np.zeros((n, h, w), dtype=bool)
        for k in range(n):
            self.masks[k] = np.ctypeslib.as_array(_lib.segmux_frame_mask(handle, k), shape=(h, w)) != 0

    def to_dict(self):
        """The official predictor's outputs dict."""
        return {"out_obj_ids": self.obj_ids, "out_probs": self.scores, "out_boxes_xywh": self.boxes_xywh,
                "out_binary_masks": self.masks}

    def __repr__(self):
        return f"Frame(frame_index={self.frame_index}, obj_ids={self.obj_ids.tolist()})"


def _take_frame(handle):
    try:
        return Frame(handle)
    finally:
        _lib.segmux_frame_free(handle)


class Model:
    """A compiled SAM 3.1 model. Give model_dir (a model folder) or checkpoint (a .pt/.safetensors
    file, compiled on first use into cache_dir; config and vocab as for `segmux track`).
    control_config: a JSON file of control-plane settings over the official defaults.
    log: a function receiving progress lines (e.g. print).
    num_threads: CPU threads (None: the cores this process may use).
    precision: how a checkpoint is compiled, "fp32" (None: the default) or "bf16" (docs/track.md)."""

    def __init__(self, model_dir=None, checkpoint=None, config=None, vocab=None, cache_dir=None,
                 control_config=None, num_threads=None, log=None, precision=None):
        opts = _capi.ModelOptions()
        _lib.segmux_model_options_init(ctypes.byref(opts))
        self._keep = [_bytes(v) for v in (model_dir, checkpoint, config, vocab, cache_dir, control_config, precision)]
        (opts.model_dir, opts.checkpoint, opts.config, opts.vocab, opts.cache_dir,
         opts.control_config, opts.precision) = self._keep
        if num_threads is not None:  # else the library's default: the cores this process may use
            opts.num_threads = int(num_threads)
        if log is not None:
            self._log = _capi.LOG_FN(lambda _user, line: log(line.decode(errors="replace")))
            opts.log = ctypes.cast(self._log, ctypes.c_void_p)
        handle = ctypes.c_void_p()
        _check(_lib.segmux_model_open(ctypes.byref(opts), ctypes.byref(handle)))
        self._handle = handle
        self._session = None

    def start_session(self, resource, keep_frames=16):
        """A session on `resource`: a path (video file, GIF or folder of frames), or an iterable of
        frames (numpy uint8 H x W x 3 RGB) taken as a live stream: frames are read as the session
        needs them and each is tracked as it arrives (see docs/python.md)."""
        if self._handle is None:
            raise SegmuxError("SEGMUX_ERROR_INVALID_ARGUMENT", "the model is closed")
        if isinstance(resource, (str, bytes, os.PathLike)):
            handle = ctypes.c_void_p()
            _check(_lib.segmux_session_open_video(self._handle, os.fsencode(resource), ctypes.byref(handle)))
            session = Session(self, handle, None, keep_frames)
        else:
            session = Session(self, None, iter(resource), keep_frames)
        self._session = session
        return session

    def close(self):
        if self._session is not None:
            self._session.close()
        if self._handle is not None:
            _check(_lib.segmux_model_close(self._handle))
            self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


class Session:
    """One video (official request API: add_prompt, propagate_in_video, remove_object, reset_session,
    close_session). Not for concurrent use from several threads."""

    def __init__(self, model, handle, frames, keep_frames):
        self._model = model
        self._handle = handle
        self._frames = frames  # live input: the iterator frames are pushed from
        self._keep = keep_frames
        self._pushed = 0
        self._tracked_until = 0  # live: frames up to here have outputs

    # -- live input -------------------------------------------------------------------------------
    def _push_next(self):
        try:
            rgb = next(self._frames)
        except StopIteration:
            return False
        rgb = np.ascontiguousarray(rgb, dtype=np.uint8)
        if rgb.ndim != 3 or rgb.shape[2] != 3:
            raise SegmuxError("SEGMUX_ERROR_INVALID_ARGUMENT",
                              f"frame {self._pushed}: expected an H x W x 3 RGB uint8 array, got shape {rgb.shape}")
        h, w = rgb.shape[:2]
        if self._handle is None:
            handle = ctypes.c_void_p()
            _check(_lib.segmux_session_open_live(self._model._handle, w, h, int(self._keep), ctypes.byref(handle)))
            self._handle = handle
        index = ctypes.c_int()
        _check(_lib.segmux_session_push_frame(self._handle, rgb.ctypes.data_as(ctypes.c_void_p), w, h, 0,
                                              ctypes.byref(index)))
        self._pushed += 1
        return True

    def _ensure_frames(self, count):
        while self._frames is not None and self._pushed < count:
            if not self._push_next():
                raise SegmuxError("SEGMUX_ERROR_FAILED",
                                  f"the frame stream ended after {self._pushed} frames (frame {count - 1} asked)")

    # -- requests ---------------------------------------------------------------------------------
    def add_prompt(self, frame_index=0, text=None, points=None, point_labels=None, boxes_xywh=None,
                   box_labels=None, obj_id=None):
        """Adds a prompt on a frame and returns that frame's outputs. Text prompts reset the session's
        objects (as officially). boxes_xywh (normalised, box_labels 1 / 0; default positive) are the
        detector's box exemplars, with or without text. Points are passed on; the engine refuses them
        until it supports them."""
        self._ensure_frames(frame_index + 1)
        p = _capi.Prompt()
        _lib.segmux_prompt_init(ctypes.byref(p))
        p.frame_index = int(frame_index)
        text_b = None if text is None else text.encode()
        p.text = text_b
        keep = []
        if boxes_xywh is not None:
            b = np.ascontiguousarray(boxes_xywh, np.float32).reshape(-1, 4)
            lb = np.ascontiguousarray(box_labels if box_labels is not None else np.ones(len(b)), np.int32)
            keep += [b, lb]
            p.boxes_xywh = b.ctypes.data_as(ctypes.POINTER(ctypes.c_float))
            p.box_labels = lb.ctypes.data_as(ctypes.POINTER(ctypes.c_int))
            p.num_boxes = len(b)
        if points is not None:
            pt = np.ascontiguousarray(points, np.float32).reshape(-1, 2)
            lp = np.ascontiguousarray(point_labels if point_labels is not None else np.ones(len(pt)), np.int32)
            keep += [pt, lp]
            p.points_xy = pt.ctypes.data_as(ctypes.POINTER(ctypes.c_float))
            p.point_labels = lp.ctypes.data_as(ctypes.POINTER(ctypes.c_int))
            p.num_points = len(pt)
        if obj_id is not None:
            p.obj_id = int(obj_id)
        out = ctypes.c_void_p()
        _check(_lib.segmux_session_add_prompt(self._require(), ctypes.byref(p), ctypes.byref(out)))
        self._tracked_until = max(self._tracked_until, frame_index + 1)
        return _take_frame(out)

    def propagate(self, direction="both", start_frame_index=None, max_frame_num_to_track=None):
        """Yields a Frame per output frame (official propagate_in_video; outputs come a few frames
        late by the official hot-start rule). Live sessions: pulls the remaining frames of the stream
        and yields each as soon as it is tracked (forward only)."""
        if direction not in _DIRECTIONS:
            raise ValueError(f"direction must be one of {sorted(_DIRECTIONS)}, not {direction!r}")
        if self._frames is not None:
            return self._propagate_live(direction, start_frame_index, max_frame_num_to_track)
        return self._propagate_video(direction, start_frame_index, max_frame_num_to_track)

    def _propagate_video(self, direction, start, max_frames):
        o = _capi.PropagateOptions()
        _lib.segmux_propagate_options_init(ctypes.byref(o))
        o.direction = _DIRECTIONS[direction]
        if start is not None:
            o.start_frame_index = int(start)
        if max_frames is not None:
            o.max_frame_num_to_track = int(max_frames)
        handle = self._require()
        _check(_lib.segmux_session_propagate_begin(handle, ctypes.byref(o)))
        try:
            while True:
                out = ctypes.c_void_p()
                if _check(_lib.segmux_session_next_frame(handle, ctypes.byref(out))) == _capi.END:
                    return
                yield _take_frame(out)
        finally:  # the caller stopped early (break, exception): end the propagation
            _lib.segmux_session_cancel(handle)

    def _propagate_live(self, direction, start, max_frames):
        if direction != "forward" and direction != "both":
            raise ValueError("a live session tracks forward only")
        limit = None if max_frames is None else self._tracked_until + int(max_frames)
        while limit is None or self._tracked_until < limit:
            if self._pushed <= self._tracked_until and not self._push_next():
                return
            t = self._tracked_until
            if start is not None and t < start:
                self._tracked_until += 1
                continue
            o = _capi.PropagateOptions()
            _lib.segmux_propagate_options_init(ctypes.byref(o))
            o.direction, o.start_frame_index, o.max_frame_num_to_track = _capi.FORWARD, t, 0
            handle = self._require()
            _check(_lib.segmux_session_propagate_begin(handle, ctypes.byref(o)))
            frames = []
            try:
                while True:
                    out = ctypes.c_void_p()
                    if _check(_lib.segmux_session_next_frame(handle, ctypes.byref(out))) == _capi.END:
                        break
                    frames.append(_take_frame(out))
            finally:
                _lib.segmux_session_cancel(handle)
            self._tracked_until += 1
            yield from frames

    def remove_object(self, obj_id):
        """Removes an object; True when it existed."""
        removed = ctypes.c_int()
        _check(_lib.segmux_session_remove_object(self._require(), int(obj_id), ctypes.byref(removed)))
        return bool(removed.value)

    def reset(self):
        """Forgets prompts and objects (official reset_session)."""
        if self._handle is not None:
            _check(_lib.segmux_session_reset(self._handle))

    @property
    def num_frames(self):
        """Frames of the video (live: pushed so far)."""
        if self._handle is None:
            return 0
        n = ctypes.c_int()
        _check(_lib.segmux_session_info(self._handle, ctypes.byref(n), None, None))
        return n.value

    def close(self):
        if self._handle is not None:
            _lib.segmux_session_close(self._handle)
            self._handle = None
        if self._model is not None and self._model._session is self:
            self._model._session = None
        self._frames = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def _require(self):
        if self._handle is None:
            if self._frames is not None:
                self._ensure_frames(1)
            if self._handle is None:
                raise SegmuxError("SEGMUX_ERROR_INVALID_ARGUMENT", "the session is closed")
        return self._handle

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
