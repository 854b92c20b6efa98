#include "io/json_limits.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>
#include <type_traits>
#include <unordered_set>
#include <vector>

#include "core/error.h"
#include "io/printable.h"

namespace segmux {

namespace {

// nlohmann's messages start with "[json.exception.parse_error.101] "; the rest says where and why.
std::string library_message(const std::exception& e) {
  std::string m = e.what();
  if (m.rfind("[json.exception.", 0) == 0) {
    const size_t close = m.find("] ");
    if (close != std::string::npos) m = m.substr(close + 2);
  }
  return printable(m, 300);
}

// Builds the tree from the parser's events in one pass and applies the limits as each value arrives,
// before a bigger tree exists. nlohmann's own callback parser rescans the enclosing container each time
// a nested object closes, so [{},{},...] cost quadratic time (a 1.9 MB safetensors header: 55 s).
template <typename Json>
class LimitedTreeBuilder {
 public:
  using number_integer_t = typename Json::number_integer_t;
  using number_unsigned_t = typename Json::number_unsigned_t;
  using number_float_t = typename Json::number_float_t;
  using string_t = typename Json::string_t;
  using binary_t = typename Json::binary_t;

  LimitedTreeBuilder(Json& root, const std::string& what, const JsonLimits& limits)
      : root_(root), what_(what), limits_(limits) {}

  bool null() { return place(Json(nullptr)); }
  bool boolean(bool v) { return place(Json(v)); }
  bool number_integer(number_integer_t v) { return place(Json(v)); }
  bool number_unsigned(number_unsigned_t v) { return place(Json(v)); }
  bool number_float(number_float_t v, const string_t&) { return place(Json(v)); }
  bool string(string_t& v) { return place(Json(std::move(v))); }
  bool binary(binary_t&) { fail(printable(what_), ": binary data in JSON text"); }
  bool start_object(std::size_t) { return open(Json(Json::value_t::object)); }
  bool start_array(std::size_t) { return open(Json(Json::value_t::array)); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(string_t& k);
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
    fail(printable(what_), ": not valid JSON: ", library_message(e));
  }

 private:
  struct Open {
    Json* node;
    std::unordered_set<std::string> keys;  // duplicates are found in O(1) whatever the object type
  };
  Json* add(Json&& v);
  bool place(Json&& v) { return add(std::move(v)), true; }
  bool open(Json&& v) {
    SEGMUX_CHECK(open_.size() < limits_.max_depth, printable(what_), ": JSON nested deeper than ", limits_.max_depth,
                 " levels");
    open_.push_back({add(std::move(v)), {}});
    return true;
  }
  bool close() { return open_.pop_back(), true; }

  Json& root_;
  const std::string& what_;
  const JsonLimits& limits_;
  std::vector<Open> open_;  // the containers not closed yet, outermost first
  Json* member_ = nullptr;  // the object member the next value fills (set by key())
  size_t values_ = 0;
};

template <typename Json>
Json* LimitedTreeBuilder<Json>::add(Json&& v) {
  SEGMUX_CHECK(++values_ <= limits_.max_values, printable(what_), ": JSON holds more than ", limits_.max_values,
               " values (the limit)");
  if (open_.empty()) return &(root_ = std::move(v));
  Json& parent = *open_.back().node;
  if (parent.is_array()) {
    auto& elements = parent.template get_ref<typename Json::array_t&>();
    elements.push_back(std::move(v));
    return &elements.back();
  }
  *member_ = std::move(v);
  return member_;
}

template <typename Json>
bool LimitedTreeBuilder<Json>::key(string_t& k) {
  Open& top = open_.back();
  SEGMUX_CHECK(top.keys.insert(k).second, printable(what_), ": JSON object has the key \"", printable(k, 80),
               "\" twice");
  // An ordered object is a vector searched linearly: append instead of looking the key up.
  auto& members = top.node->template get_ref<typename Json::object_t&>();
  if constexpr (std::is_same_v<typename Json::object_t, nlohmann::ordered_map<string_t, Json>>) {
    members.emplace_back(std::move(k), Json());
    member_ = &members.back().second;
  } else {
    member_ = &members.emplace(std::move(k), Json()).first->second;
  }
  return true;
}

template <typename Json>
Json parse_with_limits(std::string_view text, const std::string& what, const JsonLimits& limits) {
  SEGMUX_CHECK(text.size() <= limits.max_bytes, printable(what), ": JSON text of ", text.size(),
               " bytes is larger than the limit of ", limits.max_bytes, " bytes");
  Json root;
  LimitedTreeBuilder<Json> builder(root, what, limits);
  try {
    Json::sax_parse(text.begin(), text.end(), &builder);
  } catch (const nlohmann::json::exception& e) {
    fail(printable(what), ": not valid JSON: ", library_message(e));
  } catch (const std::bad_alloc&) {
    fail(printable(what), ": out of memory while parsing ", text.size(), " bytes of JSON");
  }
  return root;
}

// Counts container nesting while streaming through CBOR; stops at the first container past the limit,
// so its own recursion is bounded too.
struct CborDepthLimit : nlohmann::json::json_sax_t {
  explicit CborDepthLimit(size_t max) : max_depth(max) {}
  size_t max_depth, depth = 0;
  bool too_deep = false;
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return enter(); }
  bool key(string_t&) override { return true; }
  bool end_object() override { return --depth, true; }
  bool start_array(std::size_t) override { return enter(); }
  bool end_array() override { return --depth, true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }
  bool enter() {
    too_deep = too_deep || ++depth > max_depth;
    return !too_deep;
  }
};

template <typename Json>
std::string describe(const Json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::null:
      return "null";
    case nlohmann::json::value_t::boolean:
      return v.template get<bool>() ? "true" : "false";
    case nlohmann::json::value_t::string:
      return "the string \"" + printable(v.template get_ref<const std::string&>(), 60) + "\"";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float:
      return "the number " + v.dump();
    case nlohmann::json::value_t::array:
      return "an array of " + std::to_string(v.size()) + (v.size() == 1 ? " element" : " elements");
    case nlohmann::json::value_t::object:
      return "an object of " + std::to_string(v.size()) + (v.size() == 1 ? " entry" : " entries");
    case nlohmann::json::value_t::binary:
      return "binary data";
    case nlohmann::json::value_t::discarded:
      return "a discarded value";
  }
  return "a JSON value";
}

}  // namespace

nlohmann::json parse_untrusted_cbor(const void* data, size_t nbytes, const std::string& what,
                                    const JsonLimits& limits) {
  SEGMUX_CHECK(nbytes <= limits.max_bytes, printable(what), ": CBOR data of ", nbytes,
               " bytes is larger than the limit of ", limits.max_bytes, " bytes");
  const auto* b = static_cast<const uint8_t*>(data);
  CborDepthLimit limit(limits.max_depth);
  const bool ok = nlohmann::json::sax_parse(b, b + nbytes, &limit, nlohmann::json::input_format_t::cbor, true);
  SEGMUX_CHECK(!limit.too_deep, printable(what), ": CBOR nested deeper than ", limits.max_depth, " levels");
  SEGMUX_CHECK(ok, printable(what), " is not valid CBOR");
  try {
    return nlohmann::json::from_cbor(b, b + nbytes, true, true);
  } catch (const nlohmann::json::exception& e) {
    fail(printable(what), " is not valid CBOR: ", library_message(e));
  } catch (const std::bad_alloc&) {
    fail(printable(what), ": out of memory while parsing ", nbytes, " bytes of CBOR");
  }
}

nlohmann::json parse_untrusted_json(std::string_view text, const std::string& what, const JsonLimits& limits) {
  return parse_with_limits<nlohmann::json>(text, what, limits);
}

nlohmann::ordered_json parse_untrusted_ordered_json(std::string_view text, const std::string& what,
                                                    const JsonLimits& limits) {
  return parse_with_limits<nlohmann::ordered_json>(text, what, limits);
}

std::string read_untrusted_text_file(const std::string& path, size_t max_bytes) {
  const std::string name = printable(path);
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused as not regular below.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  SEGMUX_CHECK(fd >= 0, "cannot open '", name, "': ", std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail("'", name, "' is not a regular file");
  }
  if (uint64_t(st.st_size) > max_bytes) {
    ::close(fd);
    fail("'", name, "' is ", uint64_t(st.st_size), " bytes, larger than the limit of ", max_bytes, " bytes");
  }
  std::string text(size_t(st.st_size), '\0');
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::read(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      SEGMUX_CHECK(n == 0, "cannot read '", name, "': ", std::strerror(err));
      fail("cannot read '", name, "': it shrank while being read");
    }
    done += size_t(n);
  }
  ::close(fd);
  return text;
}

nlohmann::json read_untrusted_json_file(const std::string& path, const JsonLimits& limits) {
  return parse_untrusted_json(read_untrusted_text_file(path, limits.max_bytes), path, limits);
}

nlohmann::ordered_json read_untrusted_ordered_json_file(const std::string& path, const JsonLimits& limits) {
  return parse_untrusted_ordered_json(read_untrusted_text_file(path, limits.max_bytes), path, limits);
}

std::string describe_json(const nlohmann::json& v) { return describe(v); }
std::string describe_json(const nlohmann::ordered_json& v) { return describe(v); }

}  // namespace segmux
