/* Segments every object matching one or more text prompts in an image with the segmux C API (the
 * official image processor, as `segmux segment`) and prints one line per object: its id, the prompt
 * that found it, its score, box and mask area.
 *
 *   segment MODEL IMAGE PROMPT...                               (MODEL: a model folder)
 *   segment --checkpoint WEIGHTS CONFIG VOCAB IMAGE PROMPT...   (compiled on first use into the cache)
 *
 * Exit status 0 on success, 1 on failure (the message from segmux_last_error on stderr). */
#include <segmux/segmux.h>
#include <stdio.h>
#include <string.h>

static int fail(const char* what, segmux_status s) {
  fprintf(stderr, "segment: %s: %s: %s\n", what, segmux_status_name(s), segmux_last_error());
  return 1;
}

static void print_objects(const segmux_frame* f) {
  size_t n = segmux_frame_num_objects(f), k, i;
  size_t pixels = (size_t)segmux_frame_width(f) * (size_t)segmux_frame_height(f);
  for (k = 0; k < n; ++k) {
    const float* box = segmux_frame_boxes_xywh(f) + 4 * k;
    const uint8_t* mask = segmux_frame_mask(f, k);
    size_t area = 0;
    for (i = 0; i < pixels; ++i) area += mask[i];
    printf("object %lld: prompt \"%s\" score %.3f box %.3f %.3f %.3f %.3f area %zu\n",
           (long long)segmux_frame_obj_ids(f)[k], segmux_frame_prompt(f, k), segmux_frame_scores(f)[k], box[0], box[1],
           box[2], box[3], area);
  }
  printf("%zu objects\n", n);
}

int main(int argc, char** argv) {
  segmux_model_options mo;
  segmux_model* model = NULL;
  segmux_image_prompt prompt;
  segmux_frame* objects = NULL;
  segmux_status s;
  const char* image;
  int first_text;

  segmux_model_options_init(&mo);
  if (argc >= 4 && strcmp(argv[1], "--checkpoint") != 0) {
    mo.model_dir = argv[1];
    image = argv[2];
    first_text = 3;
  } else if (argc >= 7 && strcmp(argv[1], "--checkpoint") == 0) {
    mo.checkpoint = argv[2];
    mo.config = argv[3];
    mo.vocab = argv[4];
    image = argv[5];
    first_text = 6;
  } else {
    fprintf(stderr,
            "usage: segment MODEL_DIR IMAGE PROMPT... | segment --checkpoint WEIGHTS CONFIG VOCAB IMAGE PROMPT...\n");
    return 2;
  }
  if ((s = segmux_model_open(&mo, &model)) != SEGMUX_OK) return fail("open model", s);
  segmux_image_prompt_init(&prompt);
  prompt.texts = (const char* const*)(argv + first_text);
  prompt.num_texts = (size_t)(argc - first_text);
  s = segmux_model_segment_file(model, image, &prompt, &objects);
  if (s == SEGMUX_OK) print_objects(objects);
  segmux_frame_free(objects);
  segmux_model_close(model);
  return s == SEGMUX_OK ? 0 : fail("segment", s);
}
