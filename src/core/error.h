// Errors: every failure in segmux is a segmux::Error carrying a plain-words message.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace segmux {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

namespace detail {
inline void append(std::ostringstream&) {}
template <typename T, typename... Rest>
void append(std::ostringstream& os, const T& first, const Rest&... rest) {
  os << first;
  append(os, rest...);
}
}  // namespace detail

// Builds a message from any streamable parts: fail("node ", name, ": bad rank ", r).
template <typename... Parts>
[[noreturn]] void fail(const Parts&... parts) {
  std::ostringstream os;
  detail::append(os, parts...);
  throw Error(os.str());
}

}  // namespace segmux

#define SEGMUX_CHECK(cond, ...)               \
  do {                                        \
    if (!(cond)) ::segmux::fail(__VA_ARGS__); \
  } while (0)
