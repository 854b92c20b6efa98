// A restricted pickle virtual machine: it reads the data structures a PyTorch state dict is made of
// (protocol 2 to 5 opcodes for None/bool/int/float/str/bytes/tuple/list/dict and the memo) and
// resolves GLOBAL / REDUCE / BINPERSID only through an allowlist supplied by the caller. It never
// executes code: a global that is not allowed, or an opcode outside the subset (INST, OBJ, NEWOBJ,
// EXT*, ...), is refused with a segmux::Error naming it. Also a small pickle writer (protocol 2).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace segmux::pickle {

struct Value;
using ValuePtr = std::shared_ptr<Value>;

// One unpickled Python value. `opaque` carries objects made by the caller's hooks (e.g. a tensor
// reference); the VM itself treats them as black boxes.
struct Value {
  enum class Kind { none, boolean, integer, floating, string, bytes, tuple, list, dict, global, opaque };
  Kind kind = Kind::none;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;                                       // string (UTF-8), bytes, global module
  std::string name;                                    // global name
  std::vector<ValuePtr> items;                         // tuple, list
  std::vector<std::pair<ValuePtr, ValuePtr>> entries;  // dict, in insertion order
  std::shared_ptr<void> opaque;                        // hook-made object
  std::string opaque_type;                             // what the opaque object is, for messages
  int depth = 1;                                       // nesting depth, bounded against hostile input
  bool frozen = false;  // a list/dict stored inside another container may no longer change
  std::shared_ptr<std::unordered_map<std::string, size_t>> key_positions;  // dict: key -> entry index

  Value() = default;
  Value(const Value&) = default;
  Value(Value&&) = default;
  Value& operator=(const Value&) = default;
  Value& operator=(Value&&) = default;
  // Frees a deep graph with a worklist instead of recursion, so no nesting can exhaust the stack.
  ~Value();

  static ValuePtr make(Kind k);
  static ValuePtr make_int(int64_t v);
  static ValuePtr make_tuple(std::vector<ValuePtr> items);
  bool is(Kind k) const { return kind == k; }
  // Dict lookup by string key; nullptr when absent (or when this is not a dict).
  ValuePtr get(const std::string& key) const;
};

std::string describe(const Value& v);  // short, for messages: "int 3", "tuple of 5", "str 'abc'"

struct Hooks {
  // Globals the pickle may name (module, name). Anything else -> Error.
  std::vector<std::pair<std::string, std::string>> allowed_globals;
  // REDUCE of an allowed global with an argument tuple. Must return a value or throw.
  std::function<ValuePtr(const Value& callable, const Value& args)> reduce;
  // BUILD (set state) on an object made by reduce: returns the object to keep. Null hook -> Error.
  std::function<ValuePtr(const ValuePtr& object, const Value& state)> build;
  // BINPERSID: resolves a persistent id. Null hook -> Error.
  std::function<ValuePtr(const Value& pid)> persistent_load;
};

// Runs the VM over `data` and returns the value left by STOP. `what` names the source in errors.
// Nesting is bounded (kMaxDepth) on every container path, and so is memory: the VM refuses a pickle
// that makes it hold more than kMemoryFloor + kMemoryPerByte * min(size, budget_basis) bytes of
// values. A real state dict needs about 20 bytes per pickle byte; hostile opcode floods need over
// 200. `budget_basis` lets a caller scale the budget with the file the pickle came from (a deflated
// pickle may be a thousand times larger than its archive).
constexpr int kMaxDepth = 200;
constexpr size_t kMemoryFloor = size_t(64) << 20;
constexpr size_t kMemoryPerByte = 64;
ValuePtr unpickle(const uint8_t* data, size_t size, const Hooks& hooks, const std::string& what,
                  size_t budget_basis = SIZE_MAX);

// Minimal protocol-2 writer: the caller emits opcodes in order, the writer encodes them.
class Writer {
 public:
  Writer();  // writes PROTO 2
  void mark();
  void none();
  void boolean(bool v);
  void integer(int64_t v);
  void string(const std::string& utf8);
  void global(const std::string& module, const std::string& name);  // memoized: second use is a BINGET
  void tuple_from_mark();
  void empty_tuple();
  void empty_dict();
  void setitems_from_mark();
  void reduce();
  void binpersid();
  const std::string& finish();  // writes STOP; returns the bytes
 private:
  void put_memo();
  std::string out_;
  uint32_t next_memo_ = 0;
  std::vector<std::pair<std::string, uint32_t>> global_memo_;
  bool finished_ = false;
};

}  // namespace segmux::pickle
