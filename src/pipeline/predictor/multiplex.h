// Multiplex bucket bookkeeping of one tracker state (official multiplex_utils.MultiplexState):
// objects of a state are numbered 0..n-1 (their index in the state's object list); each bucket has
// `multiplex_count` slots holding an object index, PADDING (-1, free) or REMOVED (-1116, an object that
// was removed; the slot is not reused). Buckets whose slots are all padding/removed are deleted.
#pragma once
#include <cstdint>
#include <vector>

namespace segmux::pipeline {

inline constexpr int kPaddingSlot = -1;
inline constexpr int kRemovedSlot = -1116;

class MultiplexBuckets {
 public:
  MultiplexBuckets() = default;
  // Fresh state for n objects (controller.get_state(random=False)): indices 0..n-1 laid out in order,
  // `capacity` per bucket, ceil(n / capacity) buckets, padding in the rest.
  MultiplexBuckets(int num_objects, int capacity, int multiplex_count);

  // Free slots = buckets * capacity - non-padding slots (removed slots are not free).
  int available_slots() const;
  int num_buckets() const { return int(slots_.size()); }
  int num_objects() const { return num_valid_; }
  const std::vector<std::vector<int>>& slots() const { return slots_; }
  // Stable identifiers of the buckets (a bucket keeps its id while it exists; new buckets get new ids),
  // so that a model session can keep per-bucket memories across removals.
  const std::vector<int>& bucket_ids() const { return bucket_ids_; }

  // Appends `count` objects (indices num_objects()..): fills padding slots of existing buckets in
  // order, then opens new buckets if `allow_new_buckets` (else throws).
  void add_objects(int count, bool allow_new_buckets);
  // Marks the objects with these indices removed, deletes buckets left without objects, then renumbers
  // the remaining indices 0..m-1 keeping their order. Returns old index -> new index (-1 if removed).
  std::vector<int> remove_objects(const std::vector<int>& indices);

 private:
  int capacity_ = 0;
  int multiplex_count_ = 0;
  int num_valid_ = 0;
  int next_bucket_id_ = 0;
  std::vector<std::vector<int>> slots_;
  std::vector<int> bucket_ids_;
  void open_bucket();
};

}  // namespace segmux::pipeline
