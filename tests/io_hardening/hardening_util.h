// Helpers of the hostile-input tests: temporary files and "expect a segmux::Error saying X".
#pragma once
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"

namespace segmux::hardening {

// A path in the test's temporary folder, removed when the test binary exits.
inline std::string temp_path(const std::string& name) {
  struct Registry {
    std::vector<std::string> paths;
    ~Registry() {  // newest first: files inside a temporary folder go before the folder
      for (auto it = paths.rbegin(); it != paths.rend(); ++it) std::remove(it->c_str());
    }
  };
  static Registry registry;
  std::string p = ::testing::TempDir() + "segmux_io_hardening_" + std::to_string(::getpid()) + "_" + name;
  registry.paths.push_back(p);
  return p;
}

inline std::string write_temp(const std::string& name, const std::string& bytes) {
  const std::string path = temp_path(name);
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), std::streamsize(bytes.size()));
  return path;
}

// Runs `fn`, which must throw a segmux::Error whose message contains every one of `needles`.
template <typename Fn>
std::string expect_error(Fn fn, const std::vector<std::string>& needles) {
  try {
    fn();
  } catch (const Error& e) {
    const std::string msg = e.what();
    for (auto& n : needles) EXPECT_NE(msg.find(n), std::string::npos) << "'" << n << "' missing in: " << msg;
    return msg;
  }
  ADD_FAILURE() << "no segmux::Error; expected one mentioning '" << (needles.empty() ? "" : needles[0]) << "'";
  return {};
}

}  // namespace segmux::hardening
