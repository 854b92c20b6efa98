// The `propagation_decoder` candidate: one multiplexed propagation step of the SAM 3.1 tracker for
// ONE bucket (multiplex_count object slots): memory attention (TransformerEncoderDecoupledCrossAttention,
// decoupled image/object cross attention with 2-D RoPE) over a fixed number of memory-frame slots and
// object-pointer slots, then the MultiplexMaskDecoder, then the object pointers.
//
// Fixed shapes: the memory bank is padded to `propagation_memory_slots(cfg)` spatial memory frames and
// `propagation_pointer_slots(cfg)` pointer frames; padded slots carry valid = 0 and get an additive
// -1e30 on their attention keys, so their softmax weight is exactly 0 and the result equals the
// official unpadded computation. The contract (docs/contracts/propagation_decoder.md) lists every input.
// tracker_io.h builds the inputs from a memory bank and turns the outputs back into data space.
#pragma once
#include <string>
#include <vector>

#include "ir/graph.h"
#include "models/sam31/config.h"
#include "models/sam31/contract.h"
#include "models/sam31/weights.h"

namespace segmux::sam31 {

// Spatial memory-frame slots: up to max_cond_frames_in_attn conditioning frames + (num_maskmem - 1)
// previous frames.
int propagation_memory_slots(const ModelConfig& cfg);
// Object-pointer frame slots: up to max_cond_frames_in_attn conditioning frames + (max_obj_ptrs - 1)
// previous frames; each frame holds multiplex_count pointer tokens.
int propagation_pointer_slots(const ModelConfig& cfg);

// Builds the graph (weights under "tracker.model.").
ir::Graph build_propagation_decoder(const ModelConfig& cfg, const Weights& w);
// Same graph with fewer (or more) slots: the padded slots cost compute at full size (every memory slot is
// g*g keys), so a predictor may compile e.g. a num_maskmem-slot variant for the common case (one
// conditioning frame) and fall back to the full one when a frame selects more memories.
// assemble_propagation_inputs(..., PropagationSlots{memory_slots, pointer_slots}) fills such a graph.
ir::Graph build_propagation_decoder_for_slots(const ModelConfig& cfg, const Weights& w, int memory_slots,
                                              int pointer_slots);

// The written contract (docs/contracts/propagation_decoder.md).
contract::Description propagation_decoder_contract(const ModelConfig& cfg);

// The dense random-Fourier positional encoding of the mask decoder, (1, D, g, g), computed from
// tracker.model.image_pe_layer.positional_encoding_gaussian_matrix as the official code does in fp32.
Tensor propagation_dense_pe(const ModelConfig& cfg, const Weights& w);

}  // namespace segmux::sam31
