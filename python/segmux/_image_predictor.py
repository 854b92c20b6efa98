"""The SAM-1-style interactive image predictor (official SAM3InteractiveImagePredictor.predict) over the C API."""

import ctypes
import os

import numpy as np

from . import _capi


class ImagePredictor(_capi.Closeable):
    """An image whose embedding is computed once (official set_image), asked any number of prompts with
    predict(). While it is open the model serves nothing else; close it (or use `with`)."""

    def __init__(self, lib, model_handle, image, errors):
        self._lib, self._err = lib, errors
        self._handle = None
        handle = ctypes.c_void_p()
        if isinstance(image, (str, bytes, os.PathLike)):
            errors.check(lib.segmux_image_predictor_open_file(model_handle, errors.path(image, "image"),
                                                              ctypes.byref(handle)))
        else:
            rgb = errors.rgb(image, "image")
            h, w = rgb.shape[:2]
            errors.check(lib.segmux_image_predictor_open(model_handle, rgb.ctypes.data_as(ctypes.c_void_p), w, h, 0,
                                                         ctypes.byref(handle)))
        self._handle = handle

    def predict(self, point_coords=None, point_labels=None, box=None, mask_input=None, multimask_output=True,
                return_logits=False):
        """As the official predict: point_coords N x 2 pixels (x, y), point_labels N (1 foreground, 0
        background), box [x0, y0, x1, y1] pixels, mask_input 1 x Hm x Wm low-res logits of a previous call.
        Returns (masks C x H x W bool, or float32 logits with return_logits; scores C float32;
        low-res logits C x Hm x Wm float32), C = 3 with multimask_output, else 1."""
        if self._handle is None:
            raise self._err.invalid("the image predictor is closed")
        p = _capi.PredictPrompt()
        self._lib.segmux_predict_prompt_init(ctypes.byref(p))
        keep = []
        if point_coords is not None:
            if point_labels is None:
                raise self._err.invalid("point_labels must be supplied if point_coords is supplied")
            pts = self._err.coordinates(point_coords, "point_coords", 2)
            lbl = np.asarray(point_labels).reshape(-1)
            if len(lbl) != len(pts):
                raise self._err.invalid(f"{len(pts)} point_coords but {len(lbl)} point_labels")
            lbl = self._err.labels(lbl, len(pts), "point_labels", "points")
            keep += [pts, lbl]
            p.points_xy = pts.ctypes.data_as(ctypes.POINTER(ctypes.c_float))
            p.point_labels = lbl.ctypes.data_as(ctypes.POINTER(ctypes.c_int))
            p.num_points = len(pts)
        elif point_labels is not None:
            raise self._err.invalid("point_labels given without point_coords")
        if box is not None:
            b = self._err.coordinates(box, "box", 4)
            if len(b) != 1:
                raise self._err.invalid(f"box must be 4 numbers x0, y0, x1, y1, got {len(b)} boxes")
            keep.append(b)
            p.box_xyxy = b.ctypes.data_as(ctypes.POINTER(ctypes.c_float))
        if mask_input is not None:
            m = np.asarray(mask_input)
            if m.dtype.kind not in "fiu":
                raise TypeError(f"mask_input must be float logits, not an array of {m.dtype}")
            if m.ndim == 3 and m.shape[0] == 1:
                m = m[0]
            if m.ndim != 2 or m.shape[0] != m.shape[1]:
                raise self._err.invalid(f"mask_input must be 1 x Hm x Wm low-res logits (a previous predict's "
                                        f"third output), got shape {np.asarray(mask_input).shape}")
            m = np.ascontiguousarray(m, np.float32)
            keep.append(m)
            p.mask_input = m.ctypes.data_as(ctypes.POINTER(ctypes.c_float))
            p.mask_input_size = m.shape[0]
        p.multimask_output = 1 if multimask_output else 0
        p.return_logits = 1 if return_logits else 0
        out = ctypes.c_void_p()
        self._err.check(self._lib.segmux_image_predictor_predict(self._handle, ctypes.byref(p), ctypes.byref(out)))
        try:
            return self._take(out, bool(return_logits))
        finally:
            self._lib.segmux_prediction_free(out)

    def _take(self, out, logits):
        lib = self._lib
        n, w, h = lib.segmux_prediction_count(out), lib.segmux_prediction_width(out), lib.segmux_prediction_height(out)
        s = lib.segmux_prediction_low_res_size(out)
        scores = np.array([lib.segmux_prediction_score(out, i) for i in range(n)], np.float32)
        low = np.stack([np.ctypeslib.as_array(lib.segmux_prediction_low_res(out, i), (s, s)).copy()
                        for i in range(n)])
        if logits:
            masks = np.stack([np.ctypeslib.as_array(lib.segmux_prediction_logits(out, i), (h, w)).copy()
                              for i in range(n)])
        else:
            masks = np.stack([np.ctypeslib.as_array(lib.segmux_prediction_mask(out, i), (h, w)).astype(bool)
                              for i in range(n)])
        return masks, scores, low

    def close(self):
        if self._handle is not None:
            self._err.check(self._lib.segmux_image_predictor_close(self._handle))
            self._handle = None
