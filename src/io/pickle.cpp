#include "io/pickle.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <unordered_map>

#include "core/error.h"
#include "io/printable.h"

namespace segmux::pickle {

namespace {

// What holding one more value costs, for the memory budget: the value, its shared_ptr control block
// and allocator overhead; a pointer slot (stack, list, tuple); a memo or dict-index entry.
constexpr size_t kValueCost = sizeof(Value) + 32;
constexpr size_t kSlotCost = sizeof(ValuePtr);
constexpr size_t kIndexCost = 64;
// Small ints are shared (as in CPython): a state dict's sizes and strides are mostly such ints.
constexpr int64_t kSharedInts = 1024;

// Every pickle opcode (protocols 0-5), so a refusal can name what it saw.
const char* opcode_name(uint8_t op) {
  switch (op) {
    case '(':
      return "MARK";
    case '.':
      return "STOP";
    case '0':
      return "POP";
    case '1':
      return "POP_MARK";
    case '2':
      return "DUP";
    case 'F':
      return "FLOAT";
    case 'I':
      return "INT";
    case 'J':
      return "BININT";
    case 'K':
      return "BININT1";
    case 'L':
      return "LONG";
    case 'M':
      return "BININT2";
    case 'N':
      return "NONE";
    case 'P':
      return "PERSID";
    case 'Q':
      return "BINPERSID";
    case 'R':
      return "REDUCE";
    case 'S':
      return "STRING";
    case 'T':
      return "BINSTRING";
    case 'U':
      return "SHORT_BINSTRING";
    case 'V':
      return "UNICODE";
    case 'X':
      return "BINUNICODE";
    case 'a':
      return "APPEND";
    case 'b':
      return "BUILD";
    case 'c':
      return "GLOBAL";
    case 'd':
      return "DICT";
    case '}':
      return "EMPTY_DICT";
    case 'e':
      return "APPENDS";
    case 'g':
      return "GET";
    case 'h':
      return "BINGET";
    case 'i':
      return "INST";
    case 'j':
      return "LONG_BINGET";
    case 'l':
      return "LIST";
    case ']':
      return "EMPTY_LIST";
    case 'o':
      return "OBJ";
    case 'p':
      return "PUT";
    case 'q':
      return "BINPUT";
    case 'r':
      return "LONG_BINPUT";
    case 's':
      return "SETITEM";
    case 't':
      return "TUPLE";
    case ')':
      return "EMPTY_TUPLE";
    case 'u':
      return "SETITEMS";
    case 'G':
      return "BINFLOAT";
    case 0x80:
      return "PROTO";
    case 0x81:
      return "NEWOBJ";
    case 0x82:
      return "EXT1";
    case 0x83:
      return "EXT2";
    case 0x84:
      return "EXT4";
    case 0x85:
      return "TUPLE1";
    case 0x86:
      return "TUPLE2";
    case 0x87:
      return "TUPLE3";
    case 0x88:
      return "NEWTRUE";
    case 0x89:
      return "NEWFALSE";
    case 0x8a:
      return "LONG1";
    case 0x8b:
      return "LONG4";
    case 'B':
      return "BINBYTES";
    case 'C':
      return "SHORT_BINBYTES";
    case 0x8c:
      return "SHORT_BINUNICODE";
    case 0x8d:
      return "BINUNICODE8";
    case 0x8e:
      return "BINBYTES8";
    case 0x8f:
      return "EMPTY_SET";
    case 0x90:
      return "ADDITEMS";
    case 0x91:
      return "FROZENSET";
    case 0x92:
      return "NEWOBJ_EX";
    case 0x93:
      return "STACK_GLOBAL";
    case 0x94:
      return "MEMOIZE";
    case 0x95:
      return "FRAME";
    case 0x96:
      return "BYTEARRAY8";
    case 0x97:
      return "NEXT_BUFFER";
    case 0x98:
      return "READONLY_BUFFER";
  }
  return nullptr;
}

std::string key_index(const Value& k) {
  if (k.is(Value::Kind::string)) return "s" + k.s;
  if (k.is(Value::Kind::integer)) return "i" + std::to_string(k.i);
  return {};
}

bool is_container(const Value& v) { return v.is(Value::Kind::list) || v.is(Value::Kind::dict); }

// Immutable scalars are shared rather than allocated per opcode (a flood of NONE or BININT1 then
// costs a stack slot, not a value), by every VM: nothing ever writes to a non-container value.
struct SharedScalars {
  ValuePtr none, yes, no, empty_tuple;
  std::vector<ValuePtr> ints;  // 0 .. kSharedInts-1
};

const SharedScalars& shared() {
  static const SharedScalars s = [] {
    SharedScalars out;
    out.none = Value::make(Value::Kind::none);
    out.yes = Value::make(Value::Kind::boolean);
    out.yes->b = true;
    out.no = Value::make(Value::Kind::boolean);
    out.empty_tuple = Value::make_tuple({});
    for (int64_t k = 0; k < kSharedInts; ++k) out.ints.push_back(Value::make_int(k));
    return out;
  }();
  return s;
}

class Machine {
 public:
  Machine(const uint8_t* data, size_t size, const Hooks& hooks, const std::string& what, size_t basis)
      : p_(data),
        end_(data + size),
        begin_(data),
        hooks_(hooks),
        what_(what),
        memory_limit_(kMemoryFloor + (basis > (SIZE_MAX - kMemoryFloor) / kMemoryPerByte ? SIZE_MAX - kMemoryFloor
                                                                                         : basis * kMemoryPerByte)) {}

  ValuePtr run() {
    while (true) {
      SEGMUX_CHECK(p_ < end_, what_, ": pickle ends without STOP");
      const size_t at = size_t(p_ - begin_);
      const uint8_t op = *p_++;
      op_offset_ = at;
      switch (op) {
        case 0x80: {  // PROTO
          uint8_t v = read_u8();
          SEGMUX_CHECK(v >= 2 && v <= 5, err_prefix(), "unsupported pickle protocol ", int(v));
          break;
        }
        case 0x95:
          read_bytes(8);
          break;     // FRAME: a length hint only
        case '.': {  // STOP
          SEGMUX_CHECK(stack_.size() == 1 && marks_.empty(), err_prefix(), "STOP with ", stack_.size(), " values and ",
                       marks_.size(), " marks on the stack (expected exactly one value)");
          return stack_.back();
        }
        case '(':
          marks_.push_back(stack_.size());
          break;
        case '0':
          pop();
          break;
        case '1':
          pop_mark();
          break;
        case '2':
          push(top());
          break;
        case 'N':
          push(shared().none);
          break;
        case 0x88:
        case 0x89:
          push(op == 0x88 ? shared().yes : shared().no);
          break;
        case 'J': {
          uint32_t u;
          std::memcpy(&u, read_bytes(4), 4);
          push(make_int(int32_t(u)));
          break;
        }
        case 'K':
          push(make_int(read_u8()));
          break;
        case 'M': {
          uint16_t u;
          std::memcpy(&u, read_bytes(2), 2);
          push(make_int(u));
          break;
        }
        case 0x8a:
          push(read_long(read_u8()));
          break;
        case 0x8b:
          push(read_long(read_u32()));
          break;
        case 'G': {
          const uint8_t* b = read_bytes(8);
          uint64_t bits = 0;
          for (int k = 0; k < 8; ++k) bits = (bits << 8) | b[k];  // big-endian
          auto v = fresh(Value::Kind::floating);
          std::memcpy(&v->f, &bits, 8);
          push(v);
          break;
        }
        case 'X':
          push_text(Value::Kind::string, read_u32());
          break;
        case 0x8c:
          push_text(Value::Kind::string, read_u8());
          break;
        case 0x8d:
          push_text(Value::Kind::string, read_u64());
          break;
        case 'B':
          push_text(Value::Kind::bytes, read_u32());
          break;
        case 'C':
          push_text(Value::Kind::bytes, read_u8());
          break;
        case 0x8e:
          push_text(Value::Kind::bytes, read_u64());
          break;
        case ')':
          push(shared().empty_tuple);
          break;
        case 't':
          push(make_tuple(pop_mark()));
          break;
        case 0x85:
        case 0x86:
        case 0x87: {
          size_t n = size_t(op - 0x84);
          need(n);
          std::vector<ValuePtr> items(stack_.end() - long(n), stack_.end());
          stack_.resize(stack_.size() - n);
          push(make_tuple(std::move(items)));
          break;
        }
        case ']':
          push(fresh(Value::Kind::list));
          break;
        case 'l': {
          auto list = fresh(Value::Kind::list);
          for (auto& item : pop_mark()) append(list, item);
          push(list);
          break;
        }
        case 'a': {
          ValuePtr item = pop();
          append(top(), item);
          break;
        }
        case 'e': {
          auto items = pop_mark();
          ValuePtr list = top();
          for (auto& item : items) append(list, item);
          break;
        }
        case '}':
          push(fresh(Value::Kind::dict));
          break;
        case 'd': {
          auto items = pop_mark();
          SEGMUX_CHECK(items.size() % 2 == 0, err_prefix(), "DICT with an odd number of items");
          auto dict = fresh(Value::Kind::dict);
          for (size_t k = 0; k < items.size(); k += 2) set_item(dict, items[k], items[k + 1]);
          push(dict);
          break;
        }
        case 's': {
          ValuePtr value = pop();
          ValuePtr key = pop();
          set_item(top(), key, value);
          break;
        }
        case 'u': {
          auto items = pop_mark();
          SEGMUX_CHECK(items.size() % 2 == 0, err_prefix(), "SETITEMS with an odd number of items");
          ValuePtr dict = top();
          for (size_t k = 0; k < items.size(); k += 2) set_item(dict, items[k], items[k + 1]);
          break;
        }
        case 'c': {
          std::string module = read_line();
          std::string name = read_line();
          push(make_global(module, name));
          break;
        }
        case 0x93: {  // STACK_GLOBAL
          ValuePtr name = pop();
          ValuePtr module = pop();
          SEGMUX_CHECK(module->is(Value::Kind::string) && name->is(Value::Kind::string), err_prefix(),
                       "STACK_GLOBAL needs two strings");
          push(make_global(module->s, name->s));
          break;
        }
        case 'R': {
          ValuePtr args = pop();
          ValuePtr callable = pop();
          SEGMUX_CHECK(callable->is(Value::Kind::global), err_prefix(), "REDUCE of ", describe(*callable),
                       " (only allowed globals can be called)");
          SEGMUX_CHECK(args->is(Value::Kind::tuple), err_prefix(), "REDUCE arguments are ", describe(*args),
                       ", not a tuple");
          SEGMUX_CHECK(bool(hooks_.reduce), err_prefix(), "REDUCE of ", callable->s, ".", callable->name,
                       " is not supported");
          ValuePtr out = hooks_.reduce(*callable, *args);
          SEGMUX_CHECK(out != nullptr, err_prefix(), "REDUCE of ", callable->s, ".", callable->name, " gave nothing");
          charge(kValueCost);
          push(out);
          break;
        }
        case 'b': {
          ValuePtr state = pop();
          ValuePtr object = pop();
          SEGMUX_CHECK(bool(hooks_.build), err_prefix(), "BUILD on ", describe(*object), " is not supported");
          ValuePtr out = hooks_.build(object, *state);
          SEGMUX_CHECK(out != nullptr, err_prefix(), "BUILD on ", describe(*object), " is not supported");
          push(out);
          break;
        }
        case 'Q': {
          ValuePtr pid = pop();
          SEGMUX_CHECK(bool(hooks_.persistent_load), err_prefix(), "persistent ids are not supported here");
          ValuePtr out = hooks_.persistent_load(*pid);
          SEGMUX_CHECK(out != nullptr, err_prefix(), "persistent id ", describe(*pid), " not resolved");
          charge(kValueCost);
          push(out);
          break;
        }
        case 'h':
          get(read_u8());
          break;
        case 'j':
          get(read_u32());
          break;
        case 'q':
          put(read_u8());
          break;
        case 'r':
          put(read_u32());
          break;
        case 0x94:
          put(uint32_t(memo_.size()));
          break;  // MEMOIZE
        default: {
          const char* name = opcode_name(op);
          if (name) fail(err_prefix(), "pickle opcode ", name, " is not allowed in a tensor checkpoint");
          fail(err_prefix(), "unknown pickle opcode 0x", std::hex, int(op));
        }
      }
    }
  }

 private:
  std::string err_prefix() const {
    std::ostringstream os;
    os << what_ << ": pickle byte " << op_offset_ << ": ";
    return os.str();
  }
  const uint8_t* read_bytes(uint64_t n) {
    SEGMUX_CHECK(n <= uint64_t(end_ - p_), err_prefix(), "needs ", n, " bytes but only ", end_ - p_, " remain");
    const uint8_t* b = p_;
    p_ += n;
    return b;
  }
  uint8_t read_u8() { return *read_bytes(1); }
  uint32_t read_u32() {
    uint32_t v;
    std::memcpy(&v, read_bytes(4), 4);
    return v;
  }
  uint64_t read_u64() {
    uint64_t v;
    std::memcpy(&v, read_bytes(8), 8);
    return v;
  }
  std::string read_line() {
    const uint8_t* nl = static_cast<const uint8_t*>(std::memchr(p_, '\n', size_t(end_ - p_)));
    SEGMUX_CHECK(nl != nullptr, err_prefix(), "GLOBAL name is not terminated");
    SEGMUX_CHECK(nl - p_ <= 256, err_prefix(), "GLOBAL name is too long");
    std::string s(reinterpret_cast<const char*>(p_), size_t(nl - p_));
    p_ = nl + 1;
    return s;
  }
  ValuePtr read_long(uint64_t nbytes) {
    SEGMUX_CHECK(nbytes <= 8, err_prefix(), "integer of ", nbytes, " bytes is too large");
    const uint8_t* b = read_bytes(nbytes);
    uint64_t u = 0;
    for (uint64_t k = 0; k < nbytes; ++k) u |= uint64_t(b[k]) << (8 * k);
    if (nbytes > 0 && nbytes < 8 && (b[nbytes - 1] & 0x80)) u |= ~uint64_t(0) << (8 * nbytes);  // sign-extend
    return Value::make_int(int64_t(u));
  }
  void push_text(Value::Kind kind, uint64_t n) {
    const uint8_t* b = read_bytes(n);
    charge(size_t(n));
    auto v = fresh(kind);
    v->s.assign(reinterpret_cast<const char*>(b), size_t(n));
    push(v);
  }
  ValuePtr make_global(const std::string& module, const std::string& name) {
    for (auto& [m, n] : hooks_.allowed_globals)
      if (m == module && n == name) {
        auto v = fresh(Value::Kind::global);
        v->s = module;
        v->name = name;
        return v;
      }
    fail(err_prefix(), "global '", printable(module), ".", printable(name),
         "' is not allowed (only tensor state-dict types are)");
  }
  void push(ValuePtr v) {
    charge(kSlotCost);
    stack_.push_back(std::move(v));
  }
  // Counts memory the pickle makes the VM hold (never given back: a bound on the total, which also
  // bounds the peak); refuses input that needs more than its size can justify.
  void charge(size_t bytes) {
    SEGMUX_CHECK(bytes <= memory_limit_ - memory_used_, err_prefix(), "the pickle builds more than ",
                 memory_limit_ >> 20, " MiB of objects from ", end_ - begin_,
                 " bytes, more than any tensor checkpoint of its size needs (limit: ", kMemoryFloor >> 20, " MiB + ",
                 kMemoryPerByte, " bytes per byte of pickle or file); refusing it as hostile");
    memory_used_ += bytes;
  }
  ValuePtr fresh(Value::Kind kind) {
    charge(kValueCost);
    return Value::make(kind);
  }
  ValuePtr make_int(int64_t v) {
    if (v >= 0 && v < kSharedInts) return shared().ints[size_t(v)];
    charge(kValueCost);
    return Value::make_int(v);
  }
  ValuePtr make_tuple(std::vector<ValuePtr> items) {
    if (items.empty()) return shared().empty_tuple;
    charge(items.size() * kSlotCost);
    auto t = fresh(Value::Kind::tuple);
    for (auto& item : items) add_child(*t, item);
    t->items = std::move(items);
    return t;
  }
  void need(size_t n) {
    size_t floor = marks_.empty() ? 0 : marks_.back();
    SEGMUX_CHECK(stack_.size() >= floor + n, err_prefix(), "stack underflow");
  }
  ValuePtr pop() {
    need(1);
    ValuePtr v = std::move(stack_.back());
    stack_.pop_back();
    return v;
  }
  const ValuePtr& top() {
    need(1);
    return stack_.back();
  }
  std::vector<ValuePtr> pop_mark() {
    SEGMUX_CHECK(!marks_.empty(), err_prefix(), "no MARK on the stack");
    size_t m = marks_.back();
    marks_.pop_back();
    std::vector<ValuePtr> items(stack_.begin() + long(m), stack_.end());
    stack_.resize(m);
    return items;
  }
  void get(uint32_t idx) {
    auto it = memo_.find(idx);
    SEGMUX_CHECK(it != memo_.end(), err_prefix(), "memo entry ", idx, " was never stored");
    push(it->second);
  }
  void put(uint32_t idx) {
    charge(kIndexCost);
    memo_[idx] = top();
  }

  // A container that has been placed inside another one (list, dict or tuple) is frozen: mutating it
  // afterwards could make a reference cycle (which would leak and loop) or deepen every container
  // above it behind their backs. So a child's depth is final and the parent's bound holds.
  // Tensor state dicts never need such mutation.
  void add_child(Value& parent, const ValuePtr& child) {
    SEGMUX_CHECK(child.get() != &parent, err_prefix(), "a container cannot contain itself");
    if (is_container(*child)) child->frozen = true;
    SEGMUX_CHECK(child->depth + 1 <= kMaxDepth, err_prefix(), "values nested deeper than ", kMaxDepth);
    parent.depth = std::max(parent.depth, child->depth + 1);
  }
  void check_mutable(const Value& v) {
    SEGMUX_CHECK(!v.frozen, err_prefix(), "modifying a ", describe(v),
                 " after it was stored in another container is not supported");
  }
  void append(const ValuePtr& list, const ValuePtr& item) {
    SEGMUX_CHECK(list->is(Value::Kind::list), err_prefix(), "APPEND to ", describe(*list), ", not a list");
    check_mutable(*list);
    add_child(*list, item);
    charge(kSlotCost);
    list->items.push_back(item);
  }
  void set_item(const ValuePtr& dict, const ValuePtr& key, const ValuePtr& value) {
    SEGMUX_CHECK(dict->is(Value::Kind::dict), err_prefix(), "SETITEM on ", describe(*dict), ", not a dict");
    check_mutable(*dict);
    SEGMUX_CHECK(!is_container(*key), err_prefix(), "unhashable dict key ", describe(*key));
    add_child(*dict, key);
    add_child(*dict, value);
    std::string k = key_index(*key);
    charge(2 * kSlotCost + kIndexCost + k.size());
    if (!dict->key_positions) dict->key_positions = std::make_shared<std::unordered_map<std::string, size_t>>();
    auto& index = *dict->key_positions;
    if (!k.empty()) {
      auto it = index.find(k);
      if (it != index.end()) {  // Python semantics: a repeated key replaces the value in place
        dict->entries[it->second].second = value;
        return;
      }
      index[k] = dict->entries.size();
    }
    dict->entries.emplace_back(key, value);
  }

  const uint8_t* p_;
  const uint8_t* end_;
  const uint8_t* begin_;
  const Hooks& hooks_;
  const std::string& what_;
  size_t op_offset_ = 0;
  std::vector<ValuePtr> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint32_t, ValuePtr> memo_;
  size_t memory_used_ = 0;
  const size_t memory_limit_;
};

}  // namespace

ValuePtr Value::make(Kind k) {
  auto v = std::make_shared<Value>();
  v->kind = k;
  return v;
}

ValuePtr Value::make_int(int64_t x) {
  auto v = make(Kind::integer);
  v->i = x;
  return v;
}

ValuePtr Value::make_tuple(std::vector<ValuePtr> items) {
  auto v = make(Kind::tuple);
  for (auto& it : items) {
    SEGMUX_CHECK(it->depth + 1 <= kMaxDepth, "pickle: values nested deeper than ", kMaxDepth);
    if (is_container(*it)) it->frozen = true;  // see Machine::add_child
    v->depth = std::max(v->depth, it->depth + 1);
  }
  v->items = std::move(items);
  return v;
}

Value::~Value() {
  if (items.empty() && entries.empty()) return;
  // Children whose last owner is being freed give up their own children to the worklist first, so
  // each value is destroyed with no children left and nothing recurses.
  std::vector<ValuePtr> pending;
  auto adopt_children = [&pending](Value& v) {
    for (auto& c : v.items) pending.push_back(std::move(c));
    for (auto& [k, x] : v.entries) {
      pending.push_back(std::move(k));
      pending.push_back(std::move(x));
    }
    v.items.clear();
    v.entries.clear();
  };
  adopt_children(*this);
  while (!pending.empty()) {
    ValuePtr v = std::move(pending.back());
    pending.pop_back();
    if (v && v.use_count() == 1) adopt_children(*v);
  }
}

ValuePtr Value::get(const std::string& key) const {
  if (kind != Kind::dict) return nullptr;
  for (auto& [k, v] : entries)
    if (k->is(Kind::string) && k->s == key) return v;
  return nullptr;
}

std::string describe(const Value& v) {
  switch (v.kind) {
    case Value::Kind::none:
      return "None";
    case Value::Kind::boolean:
      return v.b ? "True" : "False";
    case Value::Kind::integer:
      return "int " + std::to_string(v.i);
    case Value::Kind::floating:
      return "float " + std::to_string(v.f);
    case Value::Kind::string:
      return "str '" + printable(v.s, 60) + "'";
    case Value::Kind::bytes:
      return "bytes of length " + std::to_string(v.s.size());
    case Value::Kind::tuple:
      return "tuple of " + std::to_string(v.items.size());
    case Value::Kind::list:
      return "list of " + std::to_string(v.items.size());
    case Value::Kind::dict:
      return "dict of " + std::to_string(v.entries.size());
    case Value::Kind::global:
      return "global " + printable(v.s) + "." + printable(v.name);
    case Value::Kind::opaque:
      return printable(v.opaque_type);
  }
  return "?";
}

ValuePtr unpickle(const uint8_t* data, size_t size, const Hooks& hooks, const std::string& what, size_t budget_basis) {
  Machine m(data, size, hooks, what, std::min(size, budget_basis));
  return m.run();
}

// ---- writer ----

Writer::Writer() {
  out_.push_back(char(0x80));
  out_.push_back(char(2));
}

void Writer::put_memo() {
  if (next_memo_ < 256) {
    out_.push_back('q');
    out_.push_back(char(next_memo_));
  } else {
    out_.push_back('r');
    uint32_t v = next_memo_;
    out_.append(reinterpret_cast<const char*>(&v), 4);
  }
  ++next_memo_;
}

void Writer::mark() { out_.push_back('('); }
void Writer::none() { out_.push_back('N'); }
void Writer::boolean(bool v) { out_.push_back(char(v ? 0x88 : 0x89)); }

void Writer::integer(int64_t v) {
  if (v >= 0 && v < 256) {
    out_.push_back('K');
    out_.push_back(char(v));
  } else if (v >= 0 && v < 65536) {
    out_.push_back('M');
    uint16_t u = uint16_t(v);
    out_.append(reinterpret_cast<const char*>(&u), 2);
  } else if (v >= INT32_MIN && v <= INT32_MAX) {
    out_.push_back('J');
    int32_t u = int32_t(v);
    out_.append(reinterpret_cast<const char*>(&u), 4);
  } else {
    out_.push_back(char(0x8a));  // LONG1, 8-byte two's complement
    out_.push_back(char(8));
    out_.append(reinterpret_cast<const char*>(&v), 8);
  }
}

void Writer::string(const std::string& utf8) {
  out_.push_back('X');
  uint32_t n = uint32_t(utf8.size());
  SEGMUX_CHECK(utf8.size() == n, "pickle writer: string too long");
  out_.append(reinterpret_cast<const char*>(&n), 4);
  out_.append(utf8);
}

void Writer::global(const std::string& module, const std::string& name) {
  const std::string key = module + "\n" + name;
  for (auto& [k, idx] : global_memo_)
    if (k == key) {
      if (idx < 256) {
        out_.push_back('h');
        out_.push_back(char(idx));
      } else {
        out_.push_back('j');
        out_.append(reinterpret_cast<const char*>(&idx), 4);
      }
      return;
    }
  out_.push_back('c');
  out_.append(module);
  out_.push_back('\n');
  out_.append(name);
  out_.push_back('\n');
  global_memo_.emplace_back(key, next_memo_);
  put_memo();
}

void Writer::tuple_from_mark() { out_.push_back('t'); }
void Writer::empty_tuple() { out_.push_back(')'); }
void Writer::empty_dict() { out_.push_back('}'); }
void Writer::setitems_from_mark() { out_.push_back('u'); }
void Writer::reduce() { out_.push_back('R'); }
void Writer::binpersid() { out_.push_back('Q'); }

const std::string& Writer::finish() {
  if (!finished_) out_.push_back('.');
  finished_ = true;
  return out_;
}

}  // namespace segmux::pickle
