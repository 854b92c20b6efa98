// Parsers of untrusted files run inside guard_allocation: a std::bad_alloc or std::length_error
// (a size the file claims that memory cannot hold) becomes a segmux::Error naming the file.
#pragma once
#include <new>
#include <stdexcept>
#include <string>

#include "core/error.h"
#include "io/printable.h"

namespace segmux {

template <typename Fn>
auto guard_allocation(const std::string& what, Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const std::bad_alloc&) {
    fail(printable(what), ": out of memory while reading it (it asks for more memory than this machine has)");
  } catch (const std::length_error&) {
    fail(printable(what), ": a size in it is too large to hold in memory");
  }
}

}  // namespace segmux
