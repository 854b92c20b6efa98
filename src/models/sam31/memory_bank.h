// One tracker state's memory over its whole life, in mux space (buckets, M, ...): made on the state's
// first tracker call, frames stored as the memory encoder writes them, the conditioning /
// non-conditioning kinds kept in step with the control plane, frames no run can read again trimmed,
// the object of a refinement extracted into a singleton state or laid out anew, dropped with the
// state. The selection and input assembly that read the bank are in tracker_io.h.
#pragma once
#include <map>
#include <set>

#include "core/tensor.h"
#include "models/sam31/config.h"
#include "models/sam31/tracker_io.h"

namespace segmux::sam31 {

// Data space (N, ...) -> mux space (buckets, M, ...); empty / removed slots are zero.
Tensor mux_objects(const MultiplexAssignment& a, int multiplex_count, const Tensor& data);
// Mux space (buckets, M, ...) -> data space (n, ...).
Tensor demux_objects(const MultiplexAssignment& a, int multiplex_count, const Tensor& muxed, int64_t n);
// A mux-space tensor stored before buckets were added has fewer rows: the new buckets are zero.
Tensor pad_buckets(const Tensor& muxed, int buckets);

// The tracker outputs of a state on one frame (mux space), kept for the frame being processed and for
// conditioning frames (a frame with mask inputs answers with them instead of running the decoder).
struct FrameTrackerOutputs {
  Tensor low_res;         // (buckets, M, Hm, Hm)
  Tensor scores;          // (buckets, M)
  Tensor stored_obj_ptr;  // (buckets, M, D)
};

struct TrackerMemory {
  MemoryBank bank;
  std::map<int, FrameTrackerOutputs> outputs;  // by frame index
  // Conditioning entries of each consolidated frame output (official conditioning_objects).
  std::map<int, std::set<int>> cond_objects;

  bool has_memory() const { return !bank.cond_frames.empty() || !bank.non_cond_frames.empty(); }

  // The control plane decides which frames are conditioning frames (removals can downgrade one, the
  // fix for states without conditioning objects promotes one): frame index -> conditioning.
  void sync_frame_kinds(const std::map<int, bool>& conditioning);

  // A frame's memory, stored as a conditioning frame (replacing a non-conditioning one of that frame)
  // or not; then trim(frame_index, window).
  void store(int frame_index, StoredFrame frame, bool conditioning, int window);

  // Bounded memory on long videos. The tracker reads non-conditioning frames at most `window` frames
  // away from the frame it processes; tracking proceeds frame by frame from a prompted (conditioning)
  // frame, forward or backward. A stored frame farther than that from `current` and from every
  // conditioning frame can never be read again by such a run, so it is dropped: the bank holds at most
  // 2 * window + 1 frames around the current frame plus each conditioning frame's neighbourhood (the
  // official code keeps every frame, which grows without bound). Outputs are kept for the current
  // frame and the frames whose memory is kept (a mask for an existing object reads them).
  void trim(int current, int window);

  // The memory of a new singleton state for data-space object `row` of this state (n objects, layout
  // `from`), laid out as `to`: every stored frame with its kind, the object's pointer and outputs, and
  // NO spatial memory (the official demuxes the per-bucket memories as if they were per slot, which
  // fails its shape check, and keeps None).
  TrackerMemory extract_object(const MultiplexAssignment& from, int64_t n, int64_t row, const MultiplexAssignment& to,
                               int multiplex_count) const;

  // A state holding one object gets a fresh layout (`from` -> `to`): every stored frame keeps the
  // spatial memory row `row` of its bucket axis (the official slices the bucket axis with the object
  // index) as bucket 0, the pointer and outputs move to the object's new slot.
  void relayout_single_object(const MultiplexAssignment& from, const MultiplexAssignment& to, int64_t row,
                              int multiplex_count);
};

// How far the tracker reads non-conditioning frames: max(num_maskmem, max_obj_ptrs_in_encoder) - 1.
int memory_window(const ModelConfig& cfg);

}  // namespace segmux::sam31
