#include "models/sam31/memory_bank.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "core/error.h"
#include "core/tensor_ops.h"

namespace segmux::sam31 {

Tensor mux_objects(const MultiplexAssignment& a, int M, const Tensor& data) {
  Shape s = data.shape();
  const size_t row = data.numel() ? data.nbytes() / size_t(s[0]) : 0;
  Shape out_shape = {int64_t(a.num_buckets()), int64_t(M)};
  out_shape.insert(out_shape.end(), s.begin() + 1, s.end());
  Tensor out(data.dtype(), out_shape);
  for (int b = 0; b < a.num_buckets(); ++b)
    for (int k = 0; k < M; ++k) {
      int obj = a.buckets[size_t(b)][size_t(k)];
      if (obj >= 0 && obj < s[0])
        std::memcpy(static_cast<std::byte*>(out.raw()) + (size_t(b) * size_t(M) + size_t(k)) * row,
                    static_cast<const std::byte*>(data.raw()) + size_t(obj) * row, row);
    }
  return out;
}

Tensor demux_objects(const MultiplexAssignment& a, int M, const Tensor& muxed, int64_t n) {
  Shape s(muxed.shape().begin() + 1, muxed.shape().end());
  s[0] = n;
  Tensor out(muxed.dtype(), s);
  const size_t row = n ? out.nbytes() / size_t(n) : 0;
  for (int b = 0; b < a.num_buckets(); ++b)
    for (int k = 0; k < M; ++k) {
      int obj = a.buckets[size_t(b)][size_t(k)];
      if (obj >= 0 && obj < n)
        std::memcpy(static_cast<std::byte*>(out.raw()) + size_t(obj) * row,
                    static_cast<const std::byte*>(muxed.raw()) + (size_t(b) * size_t(M) + size_t(k)) * row, row);
    }
  return out;
}

Tensor pad_buckets(const Tensor& muxed, int buckets) {
  SEGMUX_CHECK(muxed.dim(0) <= buckets, "stored tensor of ", muxed.dim(0), " buckets for a state of ", buckets);
  if (muxed.dim(0) == buckets) return muxed;
  Shape s = muxed.shape();
  s[0] = buckets;
  Tensor out(muxed.dtype(), s);
  std::memset(out.raw(), 0, out.nbytes());
  std::memcpy(out.raw(), muxed.raw(), muxed.nbytes());
  return out;
}

int memory_window(const ModelConfig& cfg) { return std::max(cfg.num_maskmem, cfg.max_obj_ptrs_in_encoder) - 1; }

void TrackerMemory::sync_frame_kinds(const std::map<int, bool>& conditioning) {
  for (const auto& [frame, cond] : conditioning) {
    auto& from = cond ? bank.non_cond_frames : bank.cond_frames;
    auto& to = cond ? bank.cond_frames : bank.non_cond_frames;
    auto it = from.find(frame);
    if (it == from.end()) continue;
    // A conditioning frame the interactive propagation re-ran holds both kinds (official output_dict):
    // its new non-conditioning memory stays next to the conditioning one.
    if (cond && to.count(frame)) continue;
    to[frame] = it->second;
    from.erase(it);
  }
}

void TrackerMemory::store(int frame_index, StoredFrame frame, bool conditioning, int window) {
  if (conditioning) {
    bank.cond_frames[frame_index] = std::move(frame);
    bank.non_cond_frames.erase(frame_index);
  } else {
    bank.non_cond_frames[frame_index] = std::move(frame);
  }
  trim(frame_index, window);
}

void TrackerMemory::trim(int current, int window) {
  auto near_cond = [&](int f) {
    for (const auto& [c, sf] : bank.cond_frames)
      if (std::abs(f - c) <= window) return true;
    return false;
  };
  for (auto it = bank.non_cond_frames.begin(); it != bank.non_cond_frames.end();) {
    if (std::abs(it->first - current) > window && !near_cond(it->first))
      it = bank.non_cond_frames.erase(it);
    else
      ++it;
  }
  for (auto it = outputs.begin(); it != outputs.end();) {
    if (it->first != current && !bank.cond_frames.count(it->first) && !bank.non_cond_frames.count(it->first))
      it = outputs.erase(it);
    else
      ++it;
  }
}

TrackerMemory TrackerMemory::extract_object(const MultiplexAssignment& from, int64_t n, int64_t row,
                                            const MultiplexAssignment& to, int M) const {
  TrackerMemory dst;
  // The object's row of a mux-space tensor, muxed into the singleton's layout.
  auto move = [&](const Tensor& muxed) {
    return mux_objects(to, M, take(demux_objects(from, M, pad_buckets(muxed, from.num_buckets()), n), 0, row, 1));
  };
  for (int kind = 0; kind < 2; ++kind) {
    const auto& src_frames = kind ? bank.non_cond_frames : bank.cond_frames;
    auto& dst_frames = kind ? dst.bank.non_cond_frames : dst.bank.cond_frames;
    for (const auto& [t, sf] : src_frames) {
      StoredFrame out;
      out.image_features = sf.image_features;
      if (sf.obj_ptr.defined()) out.obj_ptr = move(sf.obj_ptr);
      dst_frames[t] = out;  // maskmem_features stays undefined
    }
  }
  for (const auto& [t, p] : outputs)
    dst.outputs[t] = FrameTrackerOutputs{move(p.low_res), move(p.scores), move(p.stored_obj_ptr)};
  return dst;
}

void TrackerMemory::relayout_single_object(const MultiplexAssignment& from, const MultiplexAssignment& to, int64_t row,
                                           int M) {
  auto move = [&](const Tensor& muxed) { return mux_objects(to, M, demux_objects(from, M, muxed, 1)); };
  cond_objects.clear();  // entries are renumbered
  for (auto* frames : {&bank.cond_frames, &bank.non_cond_frames})
    for (auto& [t, sf] : *frames) {
      if (sf.maskmem_features.defined())
        sf.maskmem_features = sf.maskmem_features.dim(0) > row ? take(sf.maskmem_features, 0, row, 1) : Tensor();
      if (sf.obj_ptr.defined()) sf.obj_ptr = move(sf.obj_ptr);
    }
  for (auto& [t, p] : outputs) {
    p.low_res = move(p.low_res);
    p.scores = move(p.scores);
    p.stored_obj_ptr = move(p.stored_obj_ptr);
  }
}

}  // namespace segmux::sam31
