"""ctypes declarations of the segmux C API (include/segmux/segmux.h) and loading of libsegmux."""

import ctypes
import os

OK, END = 0, 1
BOTH, FORWARD, BACKWARD = 0, 1, 2
INT_MAX = 2**31 - 1  # a C int
INT64_MAX = 2**63 - 1


class Closeable:
    """An object owning a library handle: close() on leaving a `with` block and when collected (a
    finaliser must not raise, so errors there are dropped)."""

    def close(self):
        raise NotImplementedError

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


class ModelOptions(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("model_dir", ctypes.c_char_p),
        ("checkpoint", ctypes.c_char_p),
        ("config", ctypes.c_char_p),
        ("vocab", ctypes.c_char_p),
        ("cache_dir", ctypes.c_char_p),
        ("control_config", ctypes.c_char_p),
        ("num_threads", ctypes.c_int),
        ("log", ctypes.c_void_p),
        ("log_user", ctypes.c_void_p),
        ("precision", ctypes.c_char_p),
    ]


class Prompt(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("frame_index", ctypes.c_int),
        ("text", ctypes.c_char_p),
        ("boxes_xywh", ctypes.POINTER(ctypes.c_float)),
        ("box_labels", ctypes.POINTER(ctypes.c_int)),
        ("num_boxes", ctypes.c_size_t),
        ("points_xy", ctypes.POINTER(ctypes.c_float)),
        ("point_labels", ctypes.POINTER(ctypes.c_int)),
        ("num_points", ctypes.c_size_t),
        ("obj_id", ctypes.c_int64),
    ]


class ImagePrompt(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("texts", ctypes.POINTER(ctypes.c_char_p)),
        ("num_texts", ctypes.c_size_t),
        ("boxes_xywh", ctypes.POINTER(ctypes.c_float)),
        ("box_labels", ctypes.POINTER(ctypes.c_int)),
        ("num_boxes", ctypes.c_size_t),
        ("threshold", ctypes.c_float),
    ]


class PredictPrompt(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("points_xy", ctypes.POINTER(ctypes.c_float)),
        ("point_labels", ctypes.POINTER(ctypes.c_int)),
        ("num_points", ctypes.c_size_t),
        ("box_xyxy", ctypes.POINTER(ctypes.c_float)),
        ("mask_input", ctypes.POINTER(ctypes.c_float)),
        ("mask_input_size", ctypes.c_int),
        ("multimask_output", ctypes.c_int),
        ("return_logits", ctypes.c_int),
    ]


class PropagateOptions(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("direction", ctypes.c_int),
        ("start_frame_index", ctypes.c_int),
        ("max_frame_num_to_track", ctypes.c_int),
    ]


LOG_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p)


def _library_path():
    """SEGMUX_LIBRARY, else the libsegmux installed with this package (_paths.py: beside the module in a
    pip-installed wheel, or in the prefix's lib folder after `cmake --install`), else the system's
    search path."""
    env = os.environ.get("SEGMUX_LIBRARY")
    if env:
        return env
    try:
        from . import _paths  # written by `cmake --install` or by the wheel build (setup.py)

        path = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), _paths.LIBRARY))
        if os.path.exists(path):
            return path
    except ImportError:
        pass
    return "libsegmux.so"


def load():
    # libgomp (OpenMP, under oneDNN and the kernels) reads its spin policy when it loads: a short spin
    # keeps idle worker threads from stealing the cores on a busy machine (see docs/library.md).
    if "OMP_WAIT_POLICY" not in os.environ:
        os.environ.setdefault("GOMP_SPINCOUNT", "1000")
    path = _library_path()
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise ImportError(
            f"segmux: cannot load libsegmux ({path}): {e}. Set SEGMUX_LIBRARY to the library's path "
            "or install segmux (docs/python.md)") from e
    _declare(lib)
    return lib


def _declare(lib):
    P, c = ctypes.POINTER, ctypes
    status = c.c_int
    sigs = {
        "segmux_version": (c.c_char_p, []),
        "segmux_last_error": (c.c_char_p, []),
        "segmux_status_name": (c.c_char_p, [status]),
        "segmux_model_options_init": (None, [P(ModelOptions)]),
        "segmux_model_open": (status, [P(ModelOptions), P(c.c_void_p)]),
        "segmux_model_close": (status, [c.c_void_p]),
        "segmux_session_open_video": (status, [c.c_void_p, c.c_char_p, P(c.c_void_p)]),
        "segmux_session_open_live": (status, [c.c_void_p, c.c_int, c.c_int, c.c_int, P(c.c_void_p)]),
        "segmux_session_push_frame": (status, [c.c_void_p, c.c_void_p, c.c_int, c.c_int, c.c_size_t, P(c.c_int)]),
        "segmux_session_info": (status, [c.c_void_p, P(c.c_int), P(c.c_int), P(c.c_int)]),
        "segmux_prompt_init": (None, [P(Prompt)]),
        "segmux_session_add_prompt": (status, [c.c_void_p, P(Prompt), P(c.c_void_p)]),
        "segmux_session_add_mask": (status, [c.c_void_p, c.c_int, c.c_int64, P(c.c_uint8), c.c_int, c.c_int,
                                             P(c.c_void_p)]),
        "segmux_propagate_options_init": (None, [P(PropagateOptions)]),
        "segmux_session_propagate_begin": (status, [c.c_void_p, P(PropagateOptions)]),
        "segmux_session_next_frame": (status, [c.c_void_p, P(c.c_void_p)]),
        "segmux_session_cancel": (status, [c.c_void_p]),
        "segmux_session_end_stream": (status, [c.c_void_p]),
        "segmux_session_remove_object": (status, [c.c_void_p, c.c_int64, P(c.c_int)]),
        "segmux_session_reset": (status, [c.c_void_p]),
        "segmux_session_close": (None, [c.c_void_p]),
        "segmux_frame_index": (c.c_int, [c.c_void_p]),
        "segmux_frame_num_objects": (c.c_size_t, [c.c_void_p]),
        "segmux_frame_width": (c.c_int, [c.c_void_p]),
        "segmux_frame_height": (c.c_int, [c.c_void_p]),
        "segmux_frame_obj_ids": (P(c.c_int64), [c.c_void_p]),
        "segmux_frame_scores": (P(c.c_float), [c.c_void_p]),
        "segmux_frame_boxes_xywh": (P(c.c_float), [c.c_void_p]),
        "segmux_frame_mask": (P(c.c_uint8), [c.c_void_p, c.c_size_t]),
        "segmux_frame_free": (None, [c.c_void_p]),
        "segmux_frame_prompt": (c.c_char_p, [c.c_void_p, c.c_size_t]),
        "segmux_image_prompt_init": (None, [P(ImagePrompt)]),
        "segmux_model_segment_image": (status, [c.c_void_p, c.c_void_p, c.c_int, c.c_int, c.c_size_t,
                                                P(ImagePrompt), P(c.c_void_p)]),
        "segmux_model_segment_file": (status, [c.c_void_p, c.c_char_p, P(ImagePrompt), P(c.c_void_p)]),
        "segmux_predict_prompt_init": (None, [P(PredictPrompt)]),
        "segmux_image_predictor_open": (status, [c.c_void_p, c.c_void_p, c.c_int, c.c_int, c.c_size_t,
                                                 P(c.c_void_p)]),
        "segmux_image_predictor_open_file": (status, [c.c_void_p, c.c_char_p, P(c.c_void_p)]),
        "segmux_image_predictor_predict": (status, [c.c_void_p, P(PredictPrompt), P(c.c_void_p)]),
        "segmux_image_predictor_close": (status, [c.c_void_p]),
        "segmux_prediction_count": (c.c_size_t, [c.c_void_p]),
        "segmux_prediction_width": (c.c_int, [c.c_void_p]),
        "segmux_prediction_height": (c.c_int, [c.c_void_p]),
        "segmux_prediction_score": (c.c_float, [c.c_void_p, c.c_size_t]),
        "segmux_prediction_mask": (P(c.c_uint8), [c.c_void_p, c.c_size_t]),
        "segmux_prediction_logits": (P(c.c_float), [c.c_void_p, c.c_size_t]),
        "segmux_prediction_low_res_size": (c.c_int, [c.c_void_p]),
        "segmux_prediction_low_res": (P(c.c_float), [c.c_void_p, c.c_size_t]),
        "segmux_prediction_free": (None, [c.c_void_p]),
    }
    for name, (res, args) in sigs.items():
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args
