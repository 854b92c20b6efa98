// Hostile pickles: nesting built through every container path stays bounded, deep graphs are freed
// without recursion, and opcode floods are refused by the memory budget instead of using gigabytes.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "hardening_util.h"
#include "io/pickle.h"
#include "io/pytorch_zip.h"

using namespace segmux;
using namespace segmux::hardening;
using K = pickle::Value::Kind;

namespace {

pickle::ValuePtr unpickle_plain(const std::string& bytes) {
  pickle::Hooks hooks;  // nothing allowed
  return pickle::unpickle(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), hooks, "hostile.pkl");
}

std::string u32(uint32_t v) { return std::string(reinterpret_cast<const char*>(&v), 4); }

// L0 = []; then for k = 0..n-1: L(k+1) = [] is memoized and (L(k+1),) appended to L(k). Each list
// grows only after its tuple was made, so a depth computed at creation time stays 2 or 3 while the
// real chain L0 -> (L1,) -> L1 -> (L2,) -> ... is 2n deep.
std::string list_tuple_chain(uint32_t n) {
  std::string p = "\x80\x02]r" + u32(0) + "0";  // L0 memoized, stack empty
  p += "j" + u32(0);                            // the root L0 stays at the bottom of the stack
  for (uint32_t k = 0; k < n; ++k) {
    p += "j" + u32(k);       // L(k)
    p += "]r" + u32(k + 1);  // L(k+1), memoized
    p += "\x85";             // TUPLE1: (L(k+1),)
    p += "a0";               // append it to L(k); pop L(k)
  }
  return p + ".";
}

}  // namespace

TEST(PickleHardening, ListTupleChainCannotGrowPastTheBound) {
  // Before the fix this unpickled into a 400 000-deep chain whose destruction overflowed the stack.
  const std::string p = list_tuple_chain(200000);
  expect_error([&] { unpickle_plain(p); }, {"hostile.pkl", "after it was stored"});
  // The same chain as a checkpoint's data.pkl (as check-weights / track --weights read it).
  const std::string path = temp_path("chain.pt");
  write_stored_zip(path, {{"archive/data.pkl", p}, {"archive/version", "3\n"}});
  expect_error([&] { read_pytorch_checkpoint(path); }, {path, "after it was stored"});
}

TEST(PickleHardening, DepthBoundHoldsOnEveryContainerPath) {
  // Inside out, with no mutation after storing: x = [x], (x,) or {'k': x} (LIST, TUPLE1, DICT),
  // each kind alone and mixed.
  const std::string steps[] = {"(j" + u32(1) + "l", "j" + u32(1) + "\x85", "(X" + u32(1) + "kj" + u32(1) + "d"};
  for (int kind = 0; kind < 4; ++kind) {
    std::string p = "\x80\x02Nr" + u32(1) + "0";
    for (int level = 0; level < 1000; ++level) p += steps[kind < 3 ? kind : level % 3] + "r" + u32(1) + "0";
    p += "j" + u32(1) + ".";
    expect_error([&] { unpickle_plain(p); }, {"nested deeper than"});
  }
  // Right at the bound it still unpickles.
  std::string ok = "\x80\x02N";
  for (int level = 1; level < pickle::kMaxDepth; ++level) ok += "\x85";
  auto v = unpickle_plain(ok + ".");
  EXPECT_EQ(v->depth, pickle::kMaxDepth);
}

TEST(PickleHardening, DeepGraphsAreFreedWithoutRecursion) {
  // Built by hand (as a hook could), far past any stack: freeing must not recurse.
  pickle::ValuePtr root = pickle::Value::make(K::list);
  pickle::Value* tail = root.get();
  for (int k = 0; k < 1000000; ++k) {
    auto next = pickle::Value::make(k % 2 ? K::list : K::dict);
    if (k % 2)
      tail->items.push_back(next);
    else
      tail->entries.emplace_back(pickle::Value::make_int(k), next);
    tail = next.get();
  }
  root.reset();
  SUCCEED();
}

TEST(PickleHardening, OpcodeFloodsAreRefusedByTheMemoryBudget) {
  // One EMPTY_LIST per byte: ~250 bytes of objects per pickle byte without a budget.
  std::string flood = "\x80\x02" + std::string(1 << 20, ']') + ".";
  expect_error([&] { unpickle_plain(flood); }, {"hostile.pkl", "MiB of objects", "refusing it as hostile"});
  // EMPTY_DICT + MEMOIZE: memo entries count too.
  std::string memo_flood = "\x80\x02";
  for (int k = 0; k < (1 << 20); ++k) memo_flood += "}\x94";
  expect_error([&] { unpickle_plain(memo_flood + "."); }, {"MiB of objects"});
  // As a deflated data.pkl: 24 MiB of opcodes in a ~25 KB archive. The budget follows the archive's
  // size, so this is refused after ~65 MiB instead of taking gigabytes.
  std::string big = "\x80\x02" + std::string(24 << 20, ']') + ".";
  const std::string path = temp_path("flood.pt");
  write_stored_zip(path, {{"archive/data.pkl", big}, {"archive/version", "3\n"}}, /*deflate=*/true);
  expect_error([&] { read_pytorch_checkpoint(path); }, {path, "MiB of objects"});
}

TEST(PickleHardening, SharedScalarsKeepValues) {
  // NONE, booleans, small ints and () are shared objects now; their values must be unaffected.
  using namespace std::string_literals;
  const std::string p = "\x80\x02(NN\x88\x89K\x05K\x05M\xff\x03M\x00\x04))l."s;
  auto v = unpickle_plain(p);
  ASSERT_TRUE(v->is(K::list));
  ASSERT_EQ(v->items.size(), 10u);
  EXPECT_TRUE(v->items[0]->is(K::none));
  EXPECT_TRUE(v->items[2]->b);
  EXPECT_FALSE(v->items[3]->b);
  EXPECT_EQ(v->items[4]->i, 5);
  EXPECT_EQ(v->items[6]->i, 1023);
  EXPECT_EQ(v->items[7]->i, 1024);
  EXPECT_TRUE(v->items[8]->is(K::tuple) && v->items[8]->items.empty());
}

TEST(PickleHardening, NamesInErrorsAreValidUtf8) {
  // A GLOBAL naming bytes that are not UTF-8: the message escapes them.
  const std::string p =
      "\x80\x02"
      "c\xff\xfe\x01mod\nname\n.";
  const std::string msg = expect_error([&] { unpickle_plain(p); }, {"\\xFF\\xFE\\x01mod.name", "not allowed"});
  EXPECT_EQ(msg.find('\xff'), std::string::npos);
}
