// How tests read a refusal: the message of the segmux::Error a call throws, and a check that a text
// names the problem (the whole text shown when it does not).
#pragma once
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "core/error.h"

namespace segmux::test {

// The message of the segmux::Error that fn throws; "(no error)" when it throws none (any other
// exception goes on to the test, which fails).
inline std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace segmux::test

#define EXPECT_HAS(text, part) EXPECT_NE((text).find(part), std::string::npos) << (text)
