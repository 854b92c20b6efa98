// segmux_model_options: the default thread count is the cores the process may use (as the commands'
// --threads, not a fixed 2); options.precision is checked like --precision.
#include <gtest/gtest.h>
#include <sched.h>

#include <algorithm>
#include <string>

#include "segmux/segmux.h"

TEST(CApiOptions, ThreadsDefaultToTheUsableCores) {
  cpu_set_t all;
  CPU_ZERO(&all);
  ASSERT_EQ(sched_getaffinity(0, sizeof all, &all), 0);
  segmux_model_options mo;
  segmux_model_options_init(&mo);
  EXPECT_EQ(mo.num_threads, std::min(CPU_COUNT(&all), 1024));
  if (CPU_COUNT(&all) < 2) GTEST_SKIP() << "one CPU: nothing to narrow";
  int first = 0;
  while (!CPU_ISSET(first, &all)) ++first;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
  segmux_model_options_init(&mo);
  const int narrowed = mo.num_threads;
  ASSERT_EQ(sched_setaffinity(0, sizeof all, &all), 0);
  EXPECT_EQ(narrowed, 1);
}

TEST(CApiOptions, PrecisionIsCheckedBeforeAnythingOpens) {
  segmux_model_options mo;
  segmux_model_options_init(&mo);
  EXPECT_EQ(mo.precision, nullptr);  // fp32
  segmux_model* m = nullptr;
  mo.checkpoint = "/nonexistent/segmux.pt";
  mo.precision = "fp16";
  EXPECT_EQ(segmux_model_open(&mo, &m), SEGMUX_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(segmux_last_error()).find("options.precision 'fp16' is not a precision: use fp32 or bf16"),
            std::string::npos)
      << segmux_last_error();
  mo.checkpoint = nullptr;
  mo.model_dir = "/nonexistent/segmux-model";
  mo.precision = "bf16";
  EXPECT_EQ(segmux_model_open(&mo, &m), SEGMUX_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(segmux_last_error()).find("options.precision is for a checkpoint"), std::string::npos)
      << segmux_last_error();
  mo.precision = "fp32";  // as --precision with --model: a folder has its own
  EXPECT_EQ(segmux_model_open(&mo, &m), SEGMUX_ERROR_INVALID_ARGUMENT);
  mo.precision = "";  // empty = NULL: the folder is what fails (it does not exist)
  EXPECT_EQ(segmux_model_open(&mo, &m), SEGMUX_ERROR_NOT_FOUND);
  EXPECT_NE(std::string(segmux_last_error()).find("/nonexistent/segmux-model"), std::string::npos);
  EXPECT_EQ(m, nullptr);
}
