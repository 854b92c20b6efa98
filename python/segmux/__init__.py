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
import numbers
import os

import numpy as np

from . import _capi
from . import _image_predictor

_lib = _capi.load()

__version__ = _lib.segmux_version().decode()
__all__ = ["Model", "Session", "Frame", "ImagePredictor", "SegmuxError", "Error", "InvalidArgumentError", "NotFoundError",
           "CorruptFileError", "UnsupportedError", "BusyError", "OutOfMemoryError", "IoError", "InternalError",
           "__version__"]

_DIRECTIONS = {"both": _capi.BOTH, "forward": _capi.FORWARD, "backward": _capi.BACKWARD}


class SegmuxError(RuntimeError):
    """A failed segmux call; .status is the C API's status name (e.g. "SEGMUX_ERROR_FAILED"). Each
    status has its subclass below (catch SegmuxError for all of them)."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


Error = SegmuxError


class InvalidArgumentError(SegmuxError, ValueError):
    """A value given is out of range or malformed, or the session / model is closed."""


class NotFoundError(SegmuxError, FileNotFoundError):
    """A file or folder given does not exist."""


class CorruptFileError(SegmuxError):
    """A file exists but is damaged or not what it should be."""


class UnsupportedError(SegmuxError):
    """A well-formed input this build cannot read."""


class BusyError(SegmuxError):
    """The model or session is in use (one session per model; one call at a time per session)."""


class OutOfMemoryError(SegmuxError, MemoryError):
    pass


class IoError(SegmuxError, OSError):
    """Reading or writing failed (permissions, a full disk, ...)."""


class InternalError(SegmuxError):
    """An unexpected failure inside segmux (a bug: please report it)."""


_CLASSES = {"SEGMUX_ERROR_INVALID_ARGUMENT": InvalidArgumentError, "SEGMUX_ERROR_NOT_FOUND": NotFoundError,
            "SEGMUX_ERROR_CORRUPT_FILE": CorruptFileError, "SEGMUX_ERROR_UNSUPPORTED": UnsupportedError,
            "SEGMUX_ERROR_BUSY": BusyError, "SEGMUX_ERROR_OUT_OF_MEMORY": OutOfMemoryError,
            "SEGMUX_ERROR_IO": IoError, "SEGMUX_ERROR_INTERNAL": InternalError}


def _error(status, message):
    return _CLASSES.get(status, SegmuxError)(status, message)


def _invalid(message):
    return InvalidArgumentError("SEGMUX_ERROR_INVALID_ARGUMENT", message)


def _check(status):
    if status < 0:
        name = _lib.segmux_status_name(status).decode()
        raise _error(name, _lib.segmux_last_error().decode("utf-8", errors="replace"))
    return status


# -- conversions to C: every value is checked, never truncated, wrapped or silently converted ----------

def _int(value, name, low, high):
    """An integer in [low, high] (bool and floats refused: True is no frame index, 2.5 no id)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, not {type(value).__name__}")
    value = int(value)
    if not low <= value <= high:
        raise _invalid(f"{name} {value} is out of range ({low}..{high})")
    return value


def _path(value, name):
    try:
        path = os.fsencode(value)
    except TypeError:
        raise TypeError(f"{name} must be a path (str, bytes or os.PathLike), not {type(value).__name__}") from None
    if b"\0" in path:
        raise _invalid(f"{name} {value!r} contains a NUL character")
    return path


def _optional_path(value, name):
    return None if value is None else _path(value, name)


def _text(value, name):
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, not {type(value).__name__}")
    try:
        data = value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise _invalid(f"{name} {value!r} cannot be encoded as UTF-8 ({e.reason})") from None
    if b"\0" in data:
        raise _invalid(f"{name} {value!r} contains a NUL character")
    return data


def _binary_mask(mask):
    """A mask prompt as the C API takes it: H x W uint8, 0 background, 1 the object."""
    if not isinstance(mask, np.ndarray):
        raise TypeError(f"mask must be a numpy array (H x W, bool or 0 / 1), not {type(mask).__name__}")
    if mask.ndim != 2 or mask.shape[0] < 1 or mask.shape[1] < 1:
        raise _invalid(f"mask must be a non-empty H x W array, got shape {mask.shape}")
    if mask.dtype != np.bool_:
        if not (np.issubdtype(mask.dtype, np.integer) or np.issubdtype(mask.dtype, np.floating)):
            raise TypeError(f"mask must hold bool or 0 / 1 numbers, not {mask.dtype}")
        if not np.isin(mask, (0, 1)).all():
            raise _invalid("mask is not binary: its values must be 0 (background) or 1 (the object)")
    if not mask.any():
        raise _invalid("mask has no foreground pixel")
    return np.ascontiguousarray(mask != 0, np.uint8)


def _coordinates(values, name, width):
    """A float32 (N, width) array of finite numbers: points (width 2) or boxes (width 4)."""
    try:
        a = np.asarray(values)
    except ValueError as e:  # ragged lists
        raise _invalid(f"{name}: {e}") from None
    if a.dtype.kind not in "fiu":
        raise TypeError(f"{name} must be numbers, not an array of {a.dtype}")
    if a.size % width or (a.ndim > 1 and a.shape[-1] != width) or a.ndim > 2:
        raise _invalid(f"{name} must be N x {width} numbers, got shape {a.shape}")
    a = np.ascontiguousarray(a, np.float64).reshape(-1, width)
    if not np.isfinite(a).all():
        raise _invalid(f"{name} must be finite numbers")
    return np.ascontiguousarray(a, np.float32)


def _labels(values, count, name, of):
    """count int32 labels, each 0 or 1 (None: all positive)."""
    if values is None:
        return np.ones(count, np.int32)
    try:
        a = np.asarray(values)
    except ValueError as e:
        raise _invalid(f"{name}: {e}") from None
    if a.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be 1 / 0 (or True / False), not an array of {a.dtype}")
    a = a.reshape(-1)
    if len(a) != count:
        raise _invalid(f"{len(a)} {name} for {count} {of}: give one label per {of[:-1]}")
    if not np.isin(a, (0, 1)).all():
        raise _invalid(f"{name} must each be 1 (positive) or 0 (negative), got {a.tolist()}")
    return np.ascontiguousarray(a, np.int32)


def _rgb(image, what):
    """An H x W x 3 uint8 C-contiguous array (other dtypes refused: a float image would become black)."""
    if not isinstance(image, np.ndarray):
        raise TypeError(f"{what} must be a numpy array (H x W x 3 uint8 RGB), not {type(image).__name__}")
    if image.dtype != np.uint8:
        raise TypeError(f"{what} must be uint8 RGB (0..255), not {image.dtype}: convert it first, e.g. "
                        "(x * 255).round().astype(np.uint8) for floats in [0, 1]")
    if image.ndim != 3 or image.shape[2] != 3 or image.shape[0] == 0 or image.shape[1] == 0:
        raise _invalid(f"{what}: expected an H x W x 3 RGB uint8 array, got shape {image.shape}")
    if image.shape[0] > _capi.INT_MAX or image.shape[1] > _capi.INT_MAX:
        raise _invalid(f"{what}: {image.shape[1]}x{image.shape[0]} is too large")
    return np.ascontiguousarray(image)


class Frame:
    """The outputs of one frame (the official predictor's per-frame outputs, as numpy arrays):
    obj_ids int64 (N,), scores float32 (N,) (the detection score that created each object, official
    out_probs), boxes_xywh float32 (N, 4) normalised, masks bool (N, H, W) at the video's size, and
    prompts: for each object the text prompt that found it ("" for one made by points)."""

    __slots__ = ("frame_index", "obj_ids", "scores", "boxes_xywh", "masks", "prompts")

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
        self.prompts = []
        for k in range(n):
            self.masks[k] = np.ctypeslib.as_array(_lib.segmux_frame_mask(handle, k), shape=(h, w)) != 0
            self.prompts.append((_lib.segmux_frame_prompt(handle, k) or b"").decode("utf-8", errors="replace"))

    def to_dict(self):
        """The official predictor's outputs dict."""
        return {"out_obj_ids": self.obj_ids, "out_probs": self.scores, "out_boxes_xywh": self.boxes_xywh,
                "out_binary_masks": self.masks}

    def obj_ids_by_prompt(self):
        """{text prompt: [object ids it found]} (as the official multi-prompt answers pair them)."""
        out = {}
        for obj, prompt in zip(self.obj_ids.tolist(), self.prompts):
            out.setdefault(prompt, []).append(obj)
        return out

    def __repr__(self):
        return f"Frame(frame_index={self.frame_index}, obj_ids={self.obj_ids.tolist()})"


def _take_frame(handle):
    if not handle:
        raise InternalError("SEGMUX_ERROR_INTERNAL", "the library returned no frame")
    try:
        return Frame(handle)
    finally:
        _lib.segmux_frame_free(handle)


ImagePredictor = _image_predictor.ImagePredictor


def _set_boxes(p, boxes_xywh, box_labels, keep):
    """The box exemplars of a prompt struct (boxes_xywh, box_labels, num_boxes); the arrays its pointers
    borrow go into keep."""
    if boxes_xywh is None:
        if box_labels is not None:
            raise _invalid("box_labels given without boxes_xywh")
        return
    b = _coordinates(boxes_xywh, "boxes_xywh", 4)
    lb = _labels(box_labels, len(b), "box_labels", "boxes")
    keep += [b, lb]
    p.boxes_xywh = b.ctypes.data_as(ctypes.POINTER(ctypes.c_float))
    p.box_labels = lb.ctypes.data_as(ctypes.POINTER(ctypes.c_int))
    p.num_boxes = len(b)


class _Checks:
    """The argument checks and status handling the image predictor shares with this module."""
    check = staticmethod(lambda status: _check(status))
    invalid = staticmethod(lambda message: _invalid(message))
    path = staticmethod(lambda value, name: _path(value, name))
    rgb = staticmethod(lambda image, what: _rgb(image, what))
    coordinates = staticmethod(lambda values, name, width: _coordinates(values, name, width))
    labels = staticmethod(lambda values, count, name, of: _labels(values, count, name, of))


class Model(_capi.Closeable):
    """A compiled SAM 3.1 model. Give model_dir (a model folder) or checkpoint (a .pt/.safetensors
    file, compiled on first use into cache_dir; vocab as for `segmux track`; config: a flat model
    config JSON, `segmux fixture-config` converts a fixture's config.json).
    control_config: a JSON file of control-plane settings by field name over the official defaults.
    log: a function receiving progress lines (e.g. print).
    num_threads: CPU threads (None: the cores this process may use).
    precision: how a checkpoint is compiled, "fp32" (None: the default) or "bf16" (docs/track.md)."""

    def __init__(self, model_dir=None, checkpoint=None, config=None, vocab=None, cache_dir=None,
                 control_config=None, num_threads=None, log=None, precision=None):
        self._handle = None
        self._sessions = []  # open sessions (closed with the model)
        opts = _capi.ModelOptions()
        _lib.segmux_model_options_init(ctypes.byref(opts))
        names = ("model_dir", "checkpoint", "config", "vocab", "cache_dir", "control_config")
        values = (model_dir, checkpoint, config, vocab, cache_dir, control_config)
        self._keep = [_optional_path(v, n) for v, n in zip(values, names)]
        self._keep.append(None if precision is None else _text(precision, "precision"))
        (opts.model_dir, opts.checkpoint, opts.config, opts.vocab, opts.cache_dir,
         opts.control_config, opts.precision) = self._keep
        if num_threads is not None:  # else the library's default: the cores this process may use
            opts.num_threads = _int(num_threads, "num_threads", 1, 1024)
        if log is not None:
            if not callable(log):
                raise TypeError(f"log must be callable (e.g. print), not {type(log).__name__}")
            self._log = _capi.LOG_FN(lambda _user, line: log(line.decode("utf-8", errors="replace")))
            opts.log = ctypes.cast(self._log, ctypes.c_void_p)
        handle = ctypes.c_void_p()
        _check(_lib.segmux_model_open(ctypes.byref(opts), ctypes.byref(handle)))
        self._handle = handle

    def _require(self):
        if self._handle is None:
            raise _invalid("the model is closed")
        return self._handle

    def start_session(self, resource, keep_frames=16):
        """A session on `resource`: a path (video file, GIF or folder of frames), a list (or tuple) of
        frames (numpy uint8 H x W x 3 RGB: a video in memory, the same outputs as a folder of them), or
        any other iterable of frames taken as a live stream: frames are read as the session needs them
        and each is tracked as it arrives (see docs/python.md). A model may have several sessions open at once: each keeps its own
        state, and their calls may interleave."""
        model = self._require()
        keep_frames = _int(keep_frames, "keep_frames", 1, _capi.INT_MAX)
        if isinstance(resource, (str, bytes, os.PathLike)):
            handle = ctypes.c_void_p()
            _check(_lib.segmux_session_open_video(model, _path(resource, "the video"), ctypes.byref(handle)))
            session = Session(self, handle, None, keep_frames)
        elif isinstance(resource, (list, tuple)):
            # Frames in memory are a video, not a stream: all of them are known before any is tracked
            # (the same outputs as a folder of them, in every direction).
            session = Session(self, None, iter(resource), max(keep_frames, len(resource)))
            session._take_all_frames()
        else:
            try:
                frames = iter(resource)
            except TypeError:
                raise TypeError("start_session needs a path or an iterable of frames, not "
                                f"{type(resource).__name__}") from None
            session = Session(self, None, frames, keep_frames)
        self._sessions.append(session)
        return session

    def segment(self, image, text=None, boxes_xywh=None, box_labels=None, threshold=0.5):
        """Segments one image as `segmux segment` does (the official image processor): every object
        that `text` (a str, or a list of them, each segmented on its own) and / or the box exemplars
        (normalised x, y, w, h; box_labels 1 / 0, default positive) find, with a score above
        threshold. image: a path (PNG, JPEG, ...) or an H x W x 3 uint8 RGB array. Returns a Frame
        (frame_index 0; masks may overlap; .prompts says which text found each object). It runs
        beside the model's open sessions (on a model session of its own), from any thread."""
        model = self._require()
        texts = [] if text is None else [text] if isinstance(text, str) else list(text)
        encoded = [_text(t, "text") for t in texts]
        p = _capi.ImagePrompt()
        _lib.segmux_image_prompt_init(ctypes.byref(p))
        text_array = (ctypes.c_char_p * max(1, len(encoded)))(*encoded)
        p.texts, p.num_texts = ctypes.cast(text_array, ctypes.POINTER(ctypes.c_char_p)), len(encoded)
        keep = []  # the arrays p borrows, alive until the call
        _set_boxes(p, boxes_xywh, box_labels, keep)
        if isinstance(threshold, (bool, np.bool_)) or not isinstance(threshold, numbers.Real):
            raise TypeError(f"threshold must be a number, not {type(threshold).__name__}")
        p.threshold = float(threshold)
        out = ctypes.c_void_p()
        if isinstance(image, (str, bytes, os.PathLike)):
            _check(_lib.segmux_model_segment_file(model, _path(image, "image"), ctypes.byref(p), ctypes.byref(out)))
        else:
            rgb = _rgb(image, "image")
            h, w = rgb.shape[:2]
            _check(_lib.segmux_model_segment_image(model, rgb.ctypes.data_as(ctypes.c_void_p), w, h, 0,
                                                   ctypes.byref(p), ctypes.byref(out)))
        return _take_frame(out)

    def image_predictor(self, image):
        """The SAM-1-style interactive predictor on one image (official set_image): a path or an
        H x W x 3 uint8 RGB array. Its predict(...) answers as the official predict; close it (or use
        `with`) before the model serves anything else."""
        return ImagePredictor(_lib, self._require(), image, _Checks)

    def predict(self, image, point_coords=None, point_labels=None, box=None, mask_input=None, multimask_output=True,
                return_logits=False):
        """One official predict on `image` (set_image then predict): returns masks (C x H x W), scores
        (C) and low-res logits (C x Hm x Wm) as numpy arrays. For several prompts on one image use
        image_predictor(image), which computes the image embedding once."""
        with self.image_predictor(image) as p:
            return p.predict(point_coords=point_coords, point_labels=point_labels, box=box, mask_input=mask_input,
                             multimask_output=multimask_output, return_logits=return_logits)

    def close(self):
        for session in list(self._sessions):
            session.close()
        if self._handle is not None:
            _check(_lib.segmux_model_close(self._handle))
            self._handle = None


class Session(_capi.Closeable):
    """One video (official request API: add_prompt, propagate_in_video, remove_object, reset_session,
    close_session). Not for concurrent use from several threads. Every call after close() raises
    InvalidArgumentError (a ValueError), as does a propagate() generator resumed after it."""

    def __init__(self, model, handle, frames, keep_frames):
        self._model = model
        self._handle = handle
        self._frames = frames  # live input: the iterator frames are pushed from
        self._keep = keep_frames
        self._pushed = 0
        self._first_prompt = None  # the first prompted frame (a live propagation's default start)
        self._closed = False

    # -- live input -------------------------------------------------------------------------------
    def _push_next(self):
        try:
            frame = next(self._frames)
        except StopIteration:
            return False
        rgb = _rgb(frame, f"frame {self._pushed}")
        h, w = rgb.shape[:2]
        if self._handle is None:
            handle = ctypes.c_void_p()
            _check(_lib.segmux_session_open_live(self._model._require(), w, h, self._keep, ctypes.byref(handle)))
            self._handle = handle
        index = ctypes.c_int()
        _check(_lib.segmux_session_push_frame(self._handle, rgb.ctypes.data_as(ctypes.c_void_p), w, h, 0,
                                              ctypes.byref(index)))
        self._pushed += 1
        return True

    def _take_all_frames(self):
        while self._push_next():
            pass
        if self._handle is None:
            raise _invalid("the list of frames is empty")
        _check(_lib.segmux_session_end_stream(self._handle))
        self._frames = None  # a video from here on

    def _ensure_frames(self, count):
        while self._frames is not None and self._pushed < count:
            if not self._push_next():
                raise _invalid(f"the frame stream ended after {self._pushed} frames (frame {count - 1} asked)")

    # -- requests ---------------------------------------------------------------------------------
    def add_prompt(self, frame_index=0, text=None, points=None, point_labels=None, boxes_xywh=None,
                   box_labels=None, obj_id=None, mask=None):
        """Adds a prompt on a frame and returns that frame's outputs. text (a concept) adds the objects
        it finds; boxes_xywh (normalised, box_labels 1 / 0; default positive) are the detector's box
        exemplars, with or without text; points (normalised x, y; point_labels 1 / 0, one per point)
        with obj_id create or refine that object (docs/track.md); mask (H x W, bool or 0 / 1, any size:
        resized to the video as the official tracker does; a segmux extension) with obj_id gives that
        object's mask on the frame. A refused prompt changes nothing."""
        frame_index = _int(frame_index, "frame_index", 0, _capi.INT_MAX)
        self._check_open()
        if mask is not None:
            return self._add_mask(frame_index, text, points, boxes_xywh, obj_id, mask)
        p = _capi.Prompt()
        _lib.segmux_prompt_init(ctypes.byref(p))
        p.frame_index = frame_index
        text_b = None if text is None else _text(text, "text")
        p.text = text_b
        keep = []  # the arrays p borrows, alive until the call
        _set_boxes(p, boxes_xywh, box_labels, keep)
        if points is not None:
            pt = _coordinates(points, "points", 2)
            lp = _labels(point_labels, len(pt), "point_labels", "points")
            keep += [pt, lp]
            p.points_xy = pt.ctypes.data_as(ctypes.POINTER(ctypes.c_float))
            p.point_labels = lp.ctypes.data_as(ctypes.POINTER(ctypes.c_int))
            p.num_points = len(pt)
        elif point_labels is not None:
            raise _invalid("point_labels given without points")
        if obj_id is not None:
            p.obj_id = _int(obj_id, "obj_id", 0, _capi.INT64_MAX)
        self._ensure_frames(frame_index + 1)
        out = ctypes.c_void_p()
        _check(_lib.segmux_session_add_prompt(self._require(), ctypes.byref(p), ctypes.byref(out)))
        return self._prompted(frame_index, out)

    def _add_mask(self, frame_index, text, points, boxes_xywh, obj_id, mask):
        if text is not None or points is not None or boxes_xywh is not None:
            raise _invalid("a mask prompt is for one object: no text, points or boxes_xywh with it")
        if obj_id is None:
            raise _invalid("a mask prompt needs obj_id (the object it creates or refines)")
        obj_id = _int(obj_id, "obj_id", 0, _capi.INT64_MAX)
        m = _binary_mask(mask)
        self._ensure_frames(frame_index + 1)
        out = ctypes.c_void_p()
        _check(_lib.segmux_session_add_mask(self._require(), frame_index, obj_id,
                                            m.ctypes.data_as(ctypes.POINTER(ctypes.c_uint8)), m.shape[1], m.shape[0],
                                            ctypes.byref(out)))
        return self._prompted(frame_index, out)

    def _prompted(self, frame_index, out):
        """A prompt's outputs; frame_index may become the first prompted frame."""
        if self._first_prompt is None or frame_index < self._first_prompt:
            self._first_prompt = frame_index
        return _take_frame(out)

    def propagate(self, direction="both", start_frame_index=None, max_frame_num_to_track=None):
        """Yields a Frame per output frame (official propagate_in_video; outputs come a few frames
        late by the official hot-start rule). Live sessions: pulls the remaining frames of the stream,
        tracking each as it arrives, and yields the outputs as the hot-start rule releases them: the same
        frames and outputs as a session on a folder of those frames (forward only)."""
        if direction not in _DIRECTIONS:
            raise _invalid(f"direction must be one of {sorted(_DIRECTIONS)}, not {direction!r}")
        if start_frame_index is not None:
            start_frame_index = _int(start_frame_index, "start_frame_index", 0, _capi.INT_MAX)
        if max_frame_num_to_track is not None:
            max_frame_num_to_track = _int(max_frame_num_to_track, "max_frame_num_to_track", 0, _capi.INT_MAX)
        self._check_open()
        if self._frames is not None:
            if direction == "backward":
                raise _invalid("a live session tracks forward only")
            return self._propagate_live(start_frame_index, max_frame_num_to_track)
        return self._propagate_video(direction, start_frame_index, max_frame_num_to_track)

    def _options(self, direction, start, max_frames):
        o = _capi.PropagateOptions()
        _lib.segmux_propagate_options_init(ctypes.byref(o))
        o.direction = direction
        if start is not None:
            o.start_frame_index = start
        if max_frames is not None:
            o.max_frame_num_to_track = max_frames
        return o

    def _pull(self, options):
        """The frames of one pulled propagation (segmux_session_propagate_begin / next_frame)."""
        _check(_lib.segmux_session_propagate_begin(self._require(), ctypes.byref(options)))
        try:
            while True:
                out = ctypes.c_void_p()
                # The session is looked up on every frame: closed meanwhile, this raises instead of
                # using a freed handle.
                if _check(_lib.segmux_session_next_frame(self._require(), ctypes.byref(out))) == _capi.END:
                    return
                yield _take_frame(out)
        finally:  # the caller stopped early (break, exception): end the propagation
            if self._handle is not None:
                _lib.segmux_session_cancel(self._handle)

    def _propagate_video(self, direction, start, max_frames):
        yield from self._pull(self._options(_DIRECTIONS[direction], start, max_frames))

    def _propagate_live(self, start, max_frames):
        # One forward run over the stream (the library keeps it open across calls): after each frame
        # pushed, the outputs it releases; at the end of the stream (or of the range), the rest.
        first = start if start is not None else self._first_prompt
        options = self._options(_capi.FORWARD, start, max_frames)
        while True:
            self._check_open()
            yield from self._pull(options)
            if max_frames is not None and first is not None and self._pushed > first + max_frames:
                return  # the range is tracked: the library ended the run
            if not self._push_next():
                _check(_lib.segmux_session_end_stream(self._require()))
                yield from self._pull(options)
                return

    def remove_object(self, obj_id):
        """Removes an object; True when it existed."""
        obj_id = _int(obj_id, "obj_id", 0, _capi.INT64_MAX)
        removed = ctypes.c_int()
        _check(_lib.segmux_session_remove_object(self._require(), obj_id, ctypes.byref(removed)))
        return bool(removed.value)

    def reset(self):
        """Forgets prompts and objects (official reset_session)."""
        self._check_open()
        self._first_prompt = None
        if self._handle is not None:
            _check(_lib.segmux_session_reset(self._handle))

    @property
    def num_frames(self):
        """Frames of the video (live: pushed so far)."""
        self._check_open()
        if self._handle is None:
            return 0
        n = ctypes.c_int()
        _check(_lib.segmux_session_info(self._handle, ctypes.byref(n), None, None))
        return n.value

    def close(self):
        """Closes the session (idempotent)."""
        self._closed = True
        if self._handle is not None:
            _lib.segmux_session_close(self._handle)
            self._handle = None
        if self._model is not None and self in self._model._sessions:
            self._model._sessions.remove(self)
        self._frames = None

    def _check_open(self):
        if self._closed:
            raise _invalid("the session is closed")

    def _require(self):
        self._check_open()
        if self._handle is None and self._frames is not None:
            self._ensure_frames(1)
        if self._handle is None:
            raise _invalid("the session is closed")
        return self._handle
