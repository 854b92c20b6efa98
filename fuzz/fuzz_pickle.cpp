// libFuzzer target: the pickle VM, alone and as a checkpoint's data.pkl (with the tensor hooks), must
// turn any bytes into values or a segmux::Error: no crash, no deep recursion, bounded memory.
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/pickle.h"
#include "io/pytorch_zip.h"
#include "io_seeds.h"

namespace {

using segmux::fuzz::seed_tensors;

void put16(std::string& s, uint32_t v) { s.append(reinterpret_cast<const char*>(&v), 2); }
void put32(std::string& s, uint32_t v) { s.append(reinterpret_cast<const char*>(&v), 4); }

// An in-memory zip of stored entries (the checkpoint reader's input), without touching the disk.
std::string stored_zip(const std::vector<std::pair<std::string, std::string>>& entries) {
  std::string out, central;
  for (auto& [name, data] : entries) {
    const uint32_t crc = uint32_t(crc32(0L, reinterpret_cast<const Bytef*>(data.data()), uInt(data.size())));
    const uint32_t offset = uint32_t(out.size());
    std::string fields;  // version, flags, method, time, date, crc, sizes, name length, extra length
    put16(fields, 0);
    put16(fields, 0);
    put16(fields, 0x21);
    put32(fields, crc);
    put32(fields, uint32_t(data.size()));
    put32(fields, uint32_t(data.size()));
    put16(fields, uint32_t(name.size()));
    put16(fields, 0);
    put32(out, 0x04034b50);
    put16(out, 20);
    put16(out, 0);
    out += fields + name + data;
    put32(central, 0x02014b50);
    put16(central, 20);
    put16(central, 20);
    put16(central, 0);
    central += fields;
    put16(central, 0);  // comment
    put16(central, 0);  // disk
    put16(central, 0);  // internal attributes
    put32(central, 0);  // external attributes
    put32(central, offset);
    central += name;
  }
  const uint32_t cd_offset = uint32_t(out.size());
  out += central;
  put32(out, 0x06054b50);
  put16(out, 0);
  put16(out, 0);
  put16(out, uint32_t(entries.size()));
  put16(out, uint32_t(entries.size()));
  put32(out, uint32_t(central.size()));
  put32(out, cd_offset);
  put16(out, 0);
  return out;
}

// The seed checkpoint's storages, so a mutated data.pkl can still resolve real tensors.
std::vector<std::pair<std::string, std::string>> storage_entries() {
  std::vector<std::pair<std::string, std::string>> out;
  int k = 0;
  for (auto& [name, t] : seed_tensors())
    out.emplace_back("archive/data/" + std::to_string(k++), std::string(static_cast<const char*>(t.raw()), t.nbytes()));
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  segmux::fuzz::write_io_seeds_if_asked([] {
    std::vector<segmux::TorchTensor> tensors;
    for (auto& [name, t] : seed_tensors()) tensors.push_back({name, t, false});
    const std::string zip = segmux::fuzz::bytes_written_by(
        [&](const std::string& path) { segmux::write_pytorch_checkpoint(path, tensors); });
    segmux::ZipReader reader(segmux::fuzz::as_storage(reinterpret_cast<const uint8_t*>(zip.data()), zip.size()),
                             "seed");
    auto pkl = reader.read(*reader.find("archive/data.pkl"));
    // The writer's state dict, a nested {"model": ...} form, and plain containers.
    const std::string state(reinterpret_cast<const char*>(pkl->data), pkl->nbytes);
    segmux::pickle::Writer w;
    w.empty_dict();
    w.mark();
    w.string("model");
    w.empty_dict();
    w.mark();
    w.string("x");
    w.integer(-70000);
    w.setitems_from_mark();
    w.string("n");
    w.none();
    w.setitems_from_mark();
    static const char kListInTuple[] =  // ([1, 2],)
        "\x80\x02]q\x00(K\x01K\x02"
        "e\x85.";
    return std::vector<std::string>{state, w.finish(), std::string(kListInTuple, sizeof kListInTuple - 1)};
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const auto storages = storage_entries();
  try {
    segmux::pickle::unpickle(data, size, segmux::pickle::Hooks{}, "fuzz input");
  } catch (const segmux::Error&) {
  }
  auto entries = storages;
  entries.emplace_back("archive/data.pkl", std::string(reinterpret_cast<const char*>(data), size));
  const std::string zip = stored_zip(entries);
  try {
    auto ckpt = segmux::parse_pytorch_checkpoint(
        segmux::fuzz::as_storage(reinterpret_cast<const uint8_t*>(zip.data()), zip.size()), "fuzz input");
    size_t sum = 0;  // touch every byte (ASan checks the views stay inside their storage)
    for (auto& t : ckpt.tensors)
      for (size_t i = 0; i < t.tensor.nbytes(); ++i) sum += size_t(static_cast<const uint8_t*>(t.tensor.raw())[i]);
    if (sum == 1) return 0;
  } catch (const segmux::Error&) {
  }
  return 0;
}
