/* segmux C API: SAM 3.1 text-prompted video segmentation and tracking (docs/library.md).
 *
 *   segmux_model_options mo;  segmux_model_options_init(&mo);  mo.model_dir = "model/";
 *   segmux_model* model;      segmux_model_open(&mo, &model);
 *   segmux_session* s;        segmux_session_open_video(model, "video.mp4", &s);
 *   segmux_prompt p;          segmux_prompt_init(&p);  p.frame_index = 0;  p.text = "person";
 *   segmux_session_add_prompt(s, &p, NULL);
 *   segmux_session_propagate(s, NULL, on_frame, user);   (or propagate_begin + next_frame)
 *   segmux_session_close(s);  segmux_model_close(model);
 *
 * Conventions
 * - Every function that can fail returns a segmux_status; on failure segmux_last_error() gives a
 *   message naming what is wrong (per thread, valid until the thread's next segmux call). No C++
 *   exception ever leaves the library.
 * - Handles are opaque; the close and free functions accept NULL. Strings are UTF-8, NUL-terminated; paths are
 *   file system paths. Option structs start with struct_size (set by their _init function) so that
 *   later versions can add fields at the end without breaking callers built against this header.
 * - Thread safety: each function says which. In short: functions without a handle, and segmux_frame
 *   accessors on different frames, may run on any thread at once. A model serves several sessions at
 *   once, each with its own state: their calls may interleave (and run on different threads), and each
 *   session gets exactly the outputs it would get alone. A session's functions must not run
 *   concurrently on that session: a second call while one runs returns SEGMUX_ERROR_BUSY instead of
 *   racing. Handles may move between threads.
 * - Coordinates: boxes are [x, y, width, height] normalised to [0, 1] of the video frame; masks are
 *   at the video's original size, row-major, one byte per pixel (0 or 1). */
#ifndef SEGMUX_SEGMUX_H
#define SEGMUX_SEGMUX_H

#include <stddef.h>
#include <stdint.h>

#include "segmux/version.h"

#if defined(_WIN32)
#define SEGMUX_API
#else
#define SEGMUX_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Statuses: 0 and 1 succeed, negative values fail (the values never change; new ones may be added,
 * so treat an unknown negative value as a failure). The message always says more. */
typedef enum segmux_status {
  SEGMUX_OK = 0,
  SEGMUX_END = 1,                     /* segmux_session_next_frame: the propagation has no more frames */
  SEGMUX_ERROR_INVALID_ARGUMENT = -1, /* NULL, closed or freed handle, bad option or prompt value, frame index
                                       * outside the video, wrong struct_size, text not UTF-8 */
  SEGMUX_ERROR_FAILED = -2,           /* the request failed for another reason (see the message) */
  SEGMUX_ERROR_BUSY = -3,             /* the handle is in use (see thread safety) */
  SEGMUX_ERROR_OUT_OF_MEMORY = -4,
  SEGMUX_ERROR_INTERNAL = -5,     /* an unexpected failure inside segmux (a bug: please report it) */
  SEGMUX_ERROR_NOT_FOUND = -6,    /* a file or folder given does not exist */
  SEGMUX_ERROR_CORRUPT_FILE = -7, /* a file exists but is damaged or not what it should be (a model folder
                                   * that does not load, a checkpoint that is an image, ...) */
  SEGMUX_ERROR_UNSUPPORTED = -8,  /* a well-formed input this build cannot read (a legacy pickle checkpoint) */
  SEGMUX_ERROR_IO = -9            /* reading or writing failed (permissions, a full disk, ...) */
} segmux_status;

typedef struct segmux_model segmux_model;     /* a compiled SAM 3.1 model, ready to run */
typedef struct segmux_session segmux_session; /* one video (file, frame folder or live frames) */
typedef struct segmux_frame segmux_frame;     /* the outputs of one frame */

/* ---- Library ------------------------------------------------------------------------------------ */

/* "MAJOR.MINOR.PATCH" of the library actually loaded (compare with SEGMUX_VERSION_STRING, the header's).
 * Thread-safe. */
SEGMUX_API const char* segmux_version(void);
/* The calling thread's message for its last failed call ("" when none). Thread-safe (per thread). */
SEGMUX_API const char* segmux_last_error(void);
/* A fixed name for a status ("SEGMUX_ERROR_BUSY"). Thread-safe. */
SEGMUX_API const char* segmux_status_name(segmux_status status);

/* ---- Models ------------------------------------------------------------------------------------- */

typedef void (*segmux_log_fn)(void* user, const char* line);

typedef struct segmux_model_options {
  size_t struct_size;         /* sizeof(segmux_model_options) */
  const char* model_dir;      /* a model folder (model.json + compiled .smx files); or NULL and: */
  const char* checkpoint;     /* a SAM 3.1 checkpoint (.pt / .safetensors), compiled on first use into the cache */
  const char* config;         /* flat model config JSON for the checkpoint (NULL: the full-size SAM 3.1) */
  const char* vocab;          /* BPE vocabulary .txt.gz (NULL: found beside the checkpoint / in the model) */
  const char* cache_dir;      /* compiled-model cache (NULL: $XDG_CACHE_HOME/segmux or ~/.cache/segmux) */
  const char* control_config; /* JSON of control-plane settings by field name over the official defaults, or NULL */
  int num_threads;            /* CPU threads (default: the cores this process may use) */
  segmux_log_fn log;          /* progress lines (e.g. while compiling), or NULL */
  void* log_user;
  const char* precision; /* how a checkpoint is compiled: "fp32" (NULL: the default) or "bf16" (MatMul/Gemm/Conv
                          * weights in bf16; docs/track.md has its measured difference). Not with model_dir */
} segmux_model_options;

/* Sets defaults (everything NULL, num_threads = the cores this process may use). Thread-safe. */
SEGMUX_API void segmux_model_options_init(segmux_model_options* options);
/* Opens a model: loads a model folder, or compiles a checkpoint on first use (minutes for the full-size
 * model; later opens find it in the cache). Thread-safe (concurrent opens are serialised). */
SEGMUX_API segmux_status segmux_model_open(const segmux_model_options* options, segmux_model** model);
/* Closes a model. Its sessions and image predictors must be closed first, and no image be segmenting
 * (else SEGMUX_ERROR_BUSY and nothing is closed).
 * Not concurrently with any other call on the model or its session. A handle already closed is
 * refused (SEGMUX_ERROR_INVALID_ARGUMENT), never followed. */
SEGMUX_API segmux_status segmux_model_close(segmux_model* model);

/* ---- Images (official image processor, like `segmux segment`) ---------------------------------- */

/* What to find in an image: each text (a noun phrase) is segmented on its own, with the boxes as
 * exemplars; no text and some boxes: objects like the positive boxes (the official text "visual"). */
typedef struct segmux_image_prompt {
  size_t struct_size;       /* sizeof(segmux_image_prompt) */
  const char* const* texts; /* num_texts UTF-8 noun phrases */
  size_t num_texts;
  const float* boxes_xywh; /* num_boxes x 4, normalised [0, 1] of the image */
  const int* box_labels;   /* num_boxes: 1 positive, 0 negative */
  size_t num_boxes;
  float threshold; /* objects whose score is above it are kept (default 0.5, official confidence_threshold) */
} segmux_image_prompt;

/* Sets defaults (no text, no boxes, threshold 0.5). Thread-safe. */
SEGMUX_API void segmux_image_prompt_init(segmux_image_prompt* prompt);
/* Segments an image of RGB u8 rows of width*3 bytes `stride` apart (0: width*3). *result receives the
 * objects as a frame (frame index 0, ids 0.. in prompt order then score order of the detector's
 * queries; segmux_frame_prompt says which text found each), to be freed with segmux_frame_free. Image
 * masks may overlap (no non-overlap step, as officially). It runs on a model session of its own: beside
 * the model's open sessions and image predictors, and concurrently with them from other threads. */
SEGMUX_API segmux_status segmux_model_segment_image(segmux_model* model, const uint8_t* rgb, int width, int height,
                                                    size_t stride, const segmux_image_prompt* prompt,
                                                    segmux_frame** result);
/* The same for an image file (PNG, JPEG, BMP, ...). */
SEGMUX_API segmux_status segmux_model_segment_file(segmux_model* model, const char* path,
                                                   const segmux_image_prompt* prompt, segmux_frame** result);

/* ---- Interactive image predictor (official SAM-1-style predict, like `segmux segment --point`) ---- */

/* An image whose embedding is computed once (official set_image) and asked any number of prompts.
 * It holds a model session of its own: the model serves its sessions, images and other predictors
 * beside it; only segmux_model_close gets SEGMUX_ERROR_BUSY while it is open. */
typedef struct segmux_image_predictor segmux_image_predictor;
/* The candidate masks of one prompt, with their scores and low-res logits. */
typedef struct segmux_prediction segmux_prediction;

typedef struct segmux_predict_prompt {
  size_t struct_size;      /* sizeof(segmux_predict_prompt) */
  const float* points_xy;  /* num_points x 2: x, y in pixels of the image */
  const int* point_labels; /* num_points: 1 foreground, 0 background */
  size_t num_points;
  const float* box_xyxy;   /* NULL or 4 values: x0, y0, x1, y1 in pixels */
  const float* mask_input; /* NULL or mask_input_size^2 low-res logits (a previous segmux_prediction_low_res) */
  int mask_input_size;     /* the side of mask_input: segmux_prediction_low_res_size of the model */
  int multimask_output;    /* 1 (default): three candidates; 0: one */
  int return_logits;       /* 0 (default): binary masks; 1: logits at the image size instead */
} segmux_predict_prompt;

/* Sets defaults (no points, no box, no mask input, multimask_output 1, return_logits 0). Thread-safe. */
SEGMUX_API void segmux_predict_prompt_init(segmux_predict_prompt* prompt);
/* Opens a predictor on an image of RGB u8 rows `stride` bytes apart (0: width*3), or on an image file. */
SEGMUX_API segmux_status segmux_image_predictor_open(segmux_model* model, const uint8_t* rgb, int width, int height,
                                                     size_t stride, segmux_image_predictor** predictor);
SEGMUX_API segmux_status segmux_image_predictor_open_file(segmux_model* model, const char* path,
                                                          segmux_image_predictor** predictor);
/* Official predict: SEGMUX_ERROR_INVALID_ARGUMENT naming the problem for a bad prompt (label count,
 * labels other than 0 / 1, points or box outside the image, an empty box, a mask input of another size
 * or with non-finite values, no prompt at all). *result is the caller's (segmux_prediction_free). */
SEGMUX_API segmux_status segmux_image_predictor_predict(segmux_image_predictor* predictor,
                                                        const segmux_predict_prompt* prompt,
                                                        segmux_prediction** result);
/* Closes the predictor (NULL: nothing); the model is free again. */
SEGMUX_API segmux_status segmux_image_predictor_close(segmux_image_predictor* predictor);

/* Accessors answer 0 / NULL for a freed or foreign pointer. i < segmux_prediction_count. */
SEGMUX_API size_t segmux_prediction_count(const segmux_prediction* p); /* 3 (multimask) or 1 */
SEGMUX_API int segmux_prediction_width(const segmux_prediction* p);
SEGMUX_API int segmux_prediction_height(const segmux_prediction* p);
SEGMUX_API float segmux_prediction_score(const segmux_prediction* p, size_t i); /* predicted IoU */
/* Mask i, width*height bytes (1 = mask), row-major; NULL with return_logits. */
SEGMUX_API const uint8_t* segmux_prediction_mask(const segmux_prediction* p, size_t i);
/* Logits i at the image size, width*height floats; NULL without return_logits. */
SEGMUX_API const float* segmux_prediction_logits(const segmux_prediction* p, size_t i);
/* Low-res logits i (side segmux_prediction_low_res_size), clamped to [-32, 32]: a later mask_input. */
SEGMUX_API int segmux_prediction_low_res_size(const segmux_prediction* p);
SEGMUX_API const float* segmux_prediction_low_res(const segmux_prediction* p, size_t i);
SEGMUX_API void segmux_prediction_free(segmux_prediction* p);

/* ---- Sessions ----------------------------------------------------------------------------------- */

/* A session on a video file (MP4/MOV/WebM/..., animated GIF) or a folder of frame images (sorted by
 * name). SEGMUX_ERROR_NOT_FOUND when the path does not exist, SEGMUX_ERROR_INVALID_ARGUMENT for a pipe
 * or device (never opened: it could block), SEGMUX_ERROR_CORRUPT_FILE for a file that does not decode.
 * A model may have several sessions open, and segment images beside them. */
SEGMUX_API segmux_status segmux_session_open_video(segmux_model* model, const char* path, segmux_session** session);
/* A live session: frames come one at a time from segmux_session_push_frame, the frame count is not
 * known in advance. The session keeps the last `keep_frames` pushed frames (at least 1; 0: 16) for
 * prompts and tracking, and the outputs of those frames (a click answers with the frame's other objects). */
SEGMUX_API segmux_status segmux_session_open_live(segmux_model* model, int width, int height, int keep_frames,
                                                  segmux_session** session);
/* Live sessions: appends a frame, RGB u8 rows of width*3 bytes `stride` apart (0: width*3), of the size
 * given at open. *frame_index (may be NULL) receives its index (0, 1, ...). Then track it with a forward
 * propagation (SEGMUX_FORWARD; start_frame_index -1: the first prompted frame): on a live session it
 * continues the run of the same start over the frames pushed since, so the frames come out exactly as
 * one propagation over a video of the same frames gives them, each as soon as the hot-start rule
 * releases it (a call may deliver no frame, or earlier ones). The run ends, delivering every output it
 * still holds back, when its range (max_frame_num_to_track) is tracked, after segmux_session_end_stream,
 * or before a prompt or removal (those outputs then come first in the next propagation).
 * SEGMUX_ERROR_INVALID_ARGUMENT after segmux_session_end_stream. Session thread rule. */
SEGMUX_API segmux_status segmux_session_push_frame(segmux_session* session, const uint8_t* rgb, int width, int height,
                                                   size_t stride, int* frame_index);
/* Live sessions: no more frames come. The next forward propagation tracks the frames not yet tracked and
 * then delivers every output the hot-start rule still holds back. Session thread rule. */
SEGMUX_API segmux_status segmux_session_end_stream(segmux_session* session);
/* Frames known to the session (live: pushed so far), and the frame size. Session thread rule. */
SEGMUX_API segmux_status segmux_session_info(segmux_session* session, int* num_frames, int* width, int* height);

/* A prompt, routed as the official add_prompt: text and / or box exemplars go to the detector (boxes
 * alone are grounded with the official "<text placeholder>" text; an obj_id given with boxes is not
 * used), points (with obj_id >= 0) go to the tracker for that object: a new id creates an object, an
 * existing one is refined on that frame. Points exclude text and boxes (docs/predictor.md, Requests). */
typedef struct segmux_prompt {
  size_t struct_size;      /* sizeof(segmux_prompt) */
  int frame_index;         /* the frame the prompt is on */
  const char* text;        /* noun phrase, e.g. "person" (UTF-8): adds a concept to the session */
  const float* boxes_xywh; /* num_boxes x 4, normalised [0, 1] */
  const int* box_labels;   /* num_boxes: 1 positive, 0 negative */
  size_t num_boxes;
  const float* points_xy;  /* num_points x 2, normalised [0, 1] */
  const int* point_labels; /* num_points: 1 positive, 0 negative */
  size_t num_points;
  int64_t obj_id; /* the object the points create or refine (>= 0); -1: none (text / boxes) */
} segmux_prompt;

/* Sets defaults (frame 0, no text, no boxes or points, obj_id -1). Thread-safe. */
SEGMUX_API void segmux_prompt_init(segmux_prompt* prompt);
/* Adds a prompt and runs its frame. *outputs (may be NULL: not wanted) receives the frame's outputs,
 * to be freed with segmux_frame_free: a text prompt adds a concept (every concept of the session is
 * tracked at once; repeating a concept's text restarts that concept only) and answers with that
 * concept's objects; points answer with the frame's objects, the clicked one with its new mask.
 * Session thread rule. A refused prompt (SEGMUX_ERROR_INVALID_ARGUMENT: a frame outside the video, text
 * that is not UTF-8, a label other than 0 / 1, a coordinate that is not finite, obj_id below -1)
 * changes nothing. */
SEGMUX_API segmux_status segmux_session_add_prompt(segmux_session* session, const segmux_prompt* prompt,
                                                   segmux_frame** outputs);

/* A mask prompt for one object (a segmux extension: official requests take no masks; docs/predictor.md,
 * "Mask prompts"): `mask` is height x width bytes, row-major, 0 background and 1 (or 255) the object, of
 * any size (resized to the video as the official tracker does). A new obj_id (>= 0) creates an object,
 * an existing one is refined on that frame. *outputs as segmux_session_add_prompt. A refused mask
 * (SEGMUX_ERROR_INVALID_ARGUMENT: NULL, a size outside 1..16384, a byte other than 0 / 1 / 255, no
 * foreground pixel, a frame outside the video, obj_id < 0) changes nothing. Session thread rule. */
SEGMUX_API segmux_status segmux_session_add_mask(segmux_session* session, int frame_index, int64_t obj_id,
                                                 const uint8_t* mask, int width, int height, segmux_frame** outputs);

typedef enum segmux_direction { SEGMUX_BOTH = 0, SEGMUX_FORWARD = 1, SEGMUX_BACKWARD = 2 } segmux_direction;

typedef struct segmux_propagate_options {
  size_t struct_size;         /* sizeof(segmux_propagate_options) */
  segmux_direction direction; /* SEGMUX_BOTH (default): forward from the start frame, then backward */
  int start_frame_index;      /* -1 (default): the first prompted frame */
  int max_frame_num_to_track; /* frames beyond the start frame per direction; -1 (default): all */
} segmux_propagate_options;

/* Sets defaults (both directions, from the first prompted frame, all frames). Thread-safe. */
SEGMUX_API void segmux_propagate_options_init(segmux_propagate_options* options);

/* Called once per output frame, in processing order (outputs are held back a few frames by the
 * official hot-start rule). `frame` is valid during the call only (segmux_frame_clone keeps it).
 * Return nonzero to go on, 0 to stop the propagation. It runs on the calling thread and must not call
 * functions of this session. */
typedef int (*segmux_frame_fn)(void* user, const segmux_frame* frame);

/* Propagates the prompts through the video (official propagate_in_video). options may be NULL
 * (defaults). Stopping through the callback is not an error. Session thread rule. */
SEGMUX_API segmux_status segmux_session_propagate(segmux_session* session, const segmux_propagate_options* options,
                                                  segmux_frame_fn on_frame, void* user);
/* The same, pulled one frame at a time: begin, then next_frame until it returns SEGMUX_END (or an
 * error). Each *frame is the caller's, to be freed with segmux_frame_free. The propagation runs on a
 * worker thread one frame ahead at most, so memory stays bounded. While it is open, every other call
 * on the session but next_frame, cancel and close returns SEGMUX_ERROR_BUSY. Session thread rule. */
SEGMUX_API segmux_status segmux_session_propagate_begin(segmux_session* session,
                                                        const segmux_propagate_options* options);
SEGMUX_API segmux_status segmux_session_next_frame(segmux_session* session, segmux_frame** frame);
/* Ends a pulled propagation early (no-op when none runs). Session thread rule. */
SEGMUX_API segmux_status segmux_session_cancel(segmux_session* session);

/* Removes an object from the session; *removed (may be NULL) is 1 when it existed. Session thread rule. */
SEGMUX_API segmux_status segmux_session_remove_object(segmux_session* session, int64_t obj_id, int* removed);
/* Forgets prompts, objects and kept outputs (official reset_session); the video stays. Session thread rule. */
SEGMUX_API segmux_status segmux_session_reset(segmux_session* session);
/* Closes a session (cancels a pulled propagation first). Not concurrently with other calls on it.
 * Every later call with the closed handle returns SEGMUX_ERROR_INVALID_ARGUMENT (closing it again does
 * nothing). */
SEGMUX_API void segmux_session_close(segmux_session* session);

/* ---- Frame outputs (official per-frame outputs: out_obj_ids, out_probs, out_boxes_xywh, masks) -- */
/* Accessors are thread-safe on a frame nobody frees meanwhile. Pointers stay valid as long as the frame.
 * Given a frame already freed (or NULL), they answer NULL / 0 (frame index -1); freeing twice is a
 * no-op. */

SEGMUX_API int segmux_frame_index(const segmux_frame* frame);
SEGMUX_API size_t segmux_frame_num_objects(const segmux_frame* frame);
SEGMUX_API int segmux_frame_width(const segmux_frame* frame);
SEGMUX_API int segmux_frame_height(const segmux_frame* frame);
/* num_objects ids, ascending. */
SEGMUX_API const int64_t* segmux_frame_obj_ids(const segmux_frame* frame);
/* num_objects scores: the detection score that created each object (official out_probs). */
SEGMUX_API const float* segmux_frame_scores(const segmux_frame* frame);
/* num_objects x 4 boxes [x, y, w, h], normalised (official out_boxes_xywh). */
SEGMUX_API const float* segmux_frame_boxes_xywh(const segmux_frame* frame);
/* The text prompt that found object k (UTF-8; "" for an object made by points or boxes with obj_id);
 * NULL when k is out of range. Valid as long as the frame. */
SEGMUX_API const char* segmux_frame_prompt(const segmux_frame* frame, size_t k);
/* Object k's mask: height x width bytes, row-major, 0 or 1 (after the official non-overlap step);
 * NULL when k is out of range. */
SEGMUX_API const uint8_t* segmux_frame_mask(const segmux_frame* frame, size_t k);
/* Object k's mask as COCO uncompressed RLE: runs over the column-major mask, alternating 0s and 1s,
 * starting with 0s; *counts is valid as long as the frame. */
SEGMUX_API segmux_status segmux_frame_mask_rle(const segmux_frame* frame, size_t k, const int64_t** counts,
                                               size_t* num_counts);
/* A copy that outlives a callback; NULL when out of memory. */
SEGMUX_API segmux_frame* segmux_frame_clone(const segmux_frame* frame);
SEGMUX_API void segmux_frame_free(segmux_frame* frame);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* SEGMUX_SEGMUX_H */
