/* Tracks every object matching a text prompt through a video with the segmux C API and prints one
 * line per frame: its index, then each object's id, score, box and mask area.
 *
 *   track MODEL VIDEO PROMPT                 (MODEL: a model folder)
 *   track --checkpoint WEIGHTS CONFIG VOCAB VIDEO PROMPT   (compiled on first use into the cache)
 *
 * Exit status 0 on success, 1 on failure (the message from segmux_last_error on stderr). */
#include <segmux/segmux.h>
#include <stdio.h>
#include <string.h>

static int fail(const char* what, segmux_status s) {
  fprintf(stderr, "track: %s: %s: %s\n", what, segmux_status_name(s), segmux_last_error());
  return 1;
}

static void print_frame(const segmux_frame* f) {
  size_t n = segmux_frame_num_objects(f), k;
  size_t pixels = (size_t)segmux_frame_width(f) * (size_t)segmux_frame_height(f);
  printf("frame %d:", segmux_frame_index(f));
  for (k = 0; k < n; ++k) {
    const float* box = segmux_frame_boxes_xywh(f) + 4 * k;
    const uint8_t* mask = segmux_frame_mask(f, k);
    size_t area = 0, i;
    for (i = 0; i < pixels; ++i) area += mask[i];
    printf(" [id %lld score %.3f box %.3f %.3f %.3f %.3f area %zu]", (long long)segmux_frame_obj_ids(f)[k],
           segmux_frame_scores(f)[k], box[0], box[1], box[2], box[3], area);
  }
  printf("\n");
}

static int on_frame(void* user, const segmux_frame* frame) {
  ++*(int*)user;
  print_frame(frame);
  return 1; /* go on */
}

int main(int argc, char** argv) {
  segmux_model_options mo;
  segmux_model* model = NULL;
  segmux_session* session = NULL;
  segmux_prompt prompt;
  segmux_frame* first = NULL;
  segmux_status s;
  const char *video, *text;
  int frames = 0;

  segmux_model_options_init(&mo);
  if (argc == 4) {
    mo.model_dir = argv[1];
    video = argv[2];
    text = argv[3];
  } else if (argc == 7 && strcmp(argv[1], "--checkpoint") == 0) {
    mo.checkpoint = argv[2];
    mo.config = argv[3];
    mo.vocab = argv[4];
    video = argv[5];
    text = argv[6];
  } else {
    fprintf(stderr, "usage: track MODEL_DIR VIDEO PROMPT | track --checkpoint WEIGHTS CONFIG VOCAB VIDEO PROMPT\n");
    return 2;
  }
  printf("segmux %s (headers %s)\n", segmux_version(), SEGMUX_VERSION_STRING);
  if ((s = segmux_model_open(&mo, &model)) != SEGMUX_OK) return fail("open model", s);
  if ((s = segmux_session_open_video(model, video, &session)) != SEGMUX_OK) {
    segmux_model_close(model);
    return fail("open video", s);
  }
  segmux_prompt_init(&prompt);
  prompt.frame_index = 0;
  prompt.text = text;
  s = segmux_session_add_prompt(session, &prompt, &first);
  if (s == SEGMUX_OK) {
    printf("prompt: %zu objects on frame 0\n", segmux_frame_num_objects(first));
    segmux_frame_free(first);
    s = segmux_session_propagate(session, NULL, on_frame, &frames);
  }
  segmux_session_close(session);
  segmux_model_close(model);
  if (s != SEGMUX_OK) return fail("track", s);
  printf("%d frames tracked\n", frames);
  return frames > 0 ? 0 : 1;
}
