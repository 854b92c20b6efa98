// What kind of failure an Error is, for front doors that report kinds (the C API's statuses, Python's
// exception classes). A plain segmux::Error is of kind Failed; code that knows better throws a
// KindedError (fail_as). Kept out of core/error.h so that the many files including it are unaffected.
#pragma once
#include <sstream>
#include <string>

#include "core/error.h"

namespace segmux {

enum class ErrorKind {
  Failed,           // the request failed (the message says why)
  InvalidArgument,  // a value the caller gave is out of range or malformed
  NotFound,         // a file, folder, object or frame the caller named does not exist
  CorruptFile,      // a file exists but its content is damaged or not what it claims to be
  Unsupported,      // a valid request this build or this model cannot serve
  Io,               // reading or writing failed (disk full, permissions, ...)
};

class KindedError : public Error {
 public:
  KindedError(ErrorKind kind, const std::string& what) : Error(what), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

// fail() with a kind: fail_as(ErrorKind::NotFound, "no file '", path, "'").
template <typename... Parts>
[[noreturn]] void fail_as(ErrorKind kind, const Parts&... parts) {
  std::ostringstream os;
  detail::append(os, parts...);
  throw KindedError(kind, os.str());
}

// The kind of any segmux::Error (Failed for one thrown without a kind).
inline ErrorKind kind_of(const Error& e) {
  const auto* k = dynamic_cast<const KindedError*>(&e);
  return k ? k->kind() : ErrorKind::Failed;
}

}  // namespace segmux
