// The library's default thread count (segmux_model_options_init) is the cores the process may use,
// as the commands' --threads, not a fixed 2.
#include <gtest/gtest.h>
#include <sched.h>

#include <algorithm>

#include "segmux/segmux.h"

TEST(CApiThreads, OptionsDefaultToTheUsableCores) {
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
