// Several multiplex buckets of one tracker state in ONE call of a tracker candidate (propagation_decoder,
// memory_encoder), as the official code runs them (its tensors are batched over the state's buckets on
// axis 0). Shapes are fixed at compile time, so a bucket count is a build variant of the candidate:
// "buckets<B>" (or "<variant>.buckets<B>" over a named variant), made from the one-bucket graph by
// replication. Inputs that differ per bucket are stacked along axis 0 (B times the one-bucket rows);
// the inputs every bucket shares are given once; every output gets the buckets on axis 0 (the official
// layout). The copies read the same weights, and the compiler's common-subexpression pass computes what
// they share once (e.g. the first memory-attention layer's self-attention on the current frame, the
// memory encoder's projection of the image features).
#pragma once
#include <map>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "ir/graph.h"
#include "models/sam31/candidates.h"

namespace segmux::sam31 {

// The inputs of a tracker candidate that differ per bucket (stacked along axis 0 in a bucket variant);
// empty for the other candidates (they have no bucket variants).
const std::vector<std::string>& per_bucket_inputs(CandidateId id);
bool has_bucket_variants(CandidateId id);

// "buckets<B>" over the default build, "<base>.buckets<B>" over a named one; B >= 2.
std::string bucket_variant(const std::string& base, int buckets);
// Splits a bucket variant name into its base variant and bucket count; false when `variant` is not one.
bool parse_bucket_variant(const std::string& variant, std::string* base, int* buckets);

// The one-bucket graph `one` replicated for `buckets` buckets (see above). Every output of `one` must
// have a leading dimension of 1.
ir::Graph replicate_over_buckets(const ir::Graph& one, int buckets, const std::vector<std::string>& per_bucket);

// The glue between per-bucket input sets (what tracker_io assembles for one bucket each) and one call:
// per-bucket inputs concatenated along axis 0, the shared ones taken from bucket 0 (they must be equal
// in every bucket: same shape, and checked equal when `check_shared`).
std::map<std::string, Tensor> stack_bucket_inputs(const std::vector<std::map<std::string, Tensor>>& per_bucket,
                                                  const std::vector<std::string>& per_bucket_names,
                                                  bool check_shared = false);
// Outputs of one batched call -> one output map per bucket (rows of axis 0, each with a leading 1).
std::vector<std::map<std::string, Tensor>> split_bucket_outputs(const std::map<std::string, Tensor>& outputs,
                                                                int buckets);

}  // namespace segmux::sam31
