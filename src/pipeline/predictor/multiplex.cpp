#include "pipeline/predictor/multiplex.h"

#include <algorithm>

#include "core/error.h"

namespace segmux::pipeline {

MultiplexBuckets::MultiplexBuckets(int num_objects, int capacity, int multiplex_count)
    : capacity_(capacity), multiplex_count_(multiplex_count) {
  SEGMUX_CHECK(capacity > 0 && capacity <= multiplex_count, "multiplex: bucket capacity ", capacity, " must be in [1, ",
               multiplex_count, "]");
  SEGMUX_CHECK(num_objects > 0, "multiplex: a tracker state needs at least one object");
  add_objects(num_objects, true);
}

void MultiplexBuckets::open_bucket() {
  slots_.emplace_back(size_t(multiplex_count_), kPaddingSlot);
  bucket_ids_.push_back(next_bucket_id_++);
}

int MultiplexBuckets::available_slots() const {
  int non_padding = 0;
  for (const auto& b : slots_)
    for (int s : b) non_padding += s != kPaddingSlot;
  return num_buckets() * capacity_ - non_padding;
}

void MultiplexBuckets::add_objects(int count, bool allow_new_buckets) {
  SEGMUX_CHECK(count >= 0, "multiplex: cannot add ", count, " objects");
  int next = num_valid_;
  int remaining = count;
  for (auto& bucket : slots_) {
    for (int i = 0; i < capacity_ && remaining > 0; ++i)
      if (bucket[size_t(i)] == kPaddingSlot) {
        bucket[size_t(i)] = next++;
        --remaining;
      }
    if (remaining == 0) break;
  }
  SEGMUX_CHECK(remaining == 0 || allow_new_buckets, "multiplex: no free slots for ", remaining,
               " new objects and new buckets are not allowed");
  while (remaining > 0) {
    open_bucket();
    auto& bucket = slots_.back();
    for (int i = 0; i < capacity_ && remaining > 0; ++i) {
      bucket[size_t(i)] = next++;
      --remaining;
    }
  }
  num_valid_ = next;
}

std::vector<int> MultiplexBuckets::remove_objects(const std::vector<int>& indices) {
  for (int idx : indices)
    SEGMUX_CHECK(idx >= 0 && idx < num_valid_, "multiplex: object index ", idx, " not in a state of ", num_valid_);
  for (auto& bucket : slots_)
    for (int& s : bucket)
      if (s >= 0 && std::find(indices.begin(), indices.end(), s) != indices.end()) s = kRemovedSlot;
  for (size_t b = slots_.size(); b-- > 0;) {
    bool empty = std::all_of(slots_[b].begin(), slots_[b].end(), [](int s) { return s < 0; });
    if (empty) {
      slots_.erase(slots_.begin() + long(b));
      bucket_ids_.erase(bucket_ids_.begin() + long(b));
    }
  }
  std::vector<int> remap(size_t(num_valid_), -1);
  int next = 0;
  for (int old = 0; old < num_valid_; ++old)
    if (std::find(indices.begin(), indices.end(), old) == indices.end()) remap[size_t(old)] = next++;
  for (auto& bucket : slots_)
    for (int& s : bucket)
      if (s >= 0) s = remap[size_t(s)];
  num_valid_ = next;
  return remap;
}

}  // namespace segmux::pipeline
