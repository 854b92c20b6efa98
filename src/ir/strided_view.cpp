#include "ir/strided_view.h"

#include "core/error.h"

namespace segmux::ir {

std::string input_view_attr(int input) { return "input" + std::to_string(input) + "_view"; }
std::string input_shape_attr(int input) { return "input" + std::to_string(input) + "_shape"; }

std::optional<StridedView> input_view(const Node& node, int input) {
  const bool has_view = node.has_attr(input_view_attr(input)), has_shape = node.has_attr(input_shape_attr(input));
  if (!has_view && !has_shape) return std::nullopt;
  SEGMUX_CHECK(has_view && has_shape, node.describe(), ": ", input_view_attr(input), " and ", input_shape_attr(input),
               " go together");
  const std::vector<int64_t> v = node.attr_ints(input_view_attr(input));
  StridedView view;
  view.shape = node.attr_ints(input_shape_attr(input));
  SEGMUX_CHECK(!view.shape.empty() && v.size() == view.shape.size() + 1, node.describe(), ": ", input_view_attr(input),
               " must hold an offset and one stride per dim of ", input_shape_attr(input));
  view.offset = v[0];
  view.strides.assign(v.begin() + 1, v.end());
  return view;
}

void set_input_view(Node& node, int input, const StridedView& view) {
  std::vector<int64_t> v = {view.offset};
  v.insert(v.end(), view.strides.begin(), view.strides.end());
  node.attrs[input_view_attr(input)] = v;
  node.attrs[input_shape_attr(input)] = std::vector<int64_t>(view.shape);
}

Shape read_shape(const Node& node, int input, const Shape& own) {
  const std::optional<StridedView> view = input_view(node, input);
  return view ? view->shape : own;
}

std::string check_view(const StridedView& view, int64_t numel) {
  if (view.shape.empty() || view.strides.size() != view.shape.size()) return "a view needs a stride per dim";
  if (view.offset < 0) return "negative view offset";
  // The last element read, in int64 without overflow: every term is checked against numel first.
  int64_t last = view.offset;
  bool empty = false;
  for (size_t d = 0; d < view.shape.size(); ++d) {
    if (view.shape[d] < 0 || view.strides[d] < 0) return "negative view dims or strides";
    if (view.shape[d] == 0) empty = true;
  }
  if (empty) return "";
  if (view.strides.back() != 1 && view.shape.back() > 1) return "the innermost view stride must be 1";
  for (size_t d = 0; d < view.shape.size(); ++d) {
    if (view.strides[d] > 0 && view.shape[d] - 1 > (numel - 1 - last) / view.strides[d])
      return "the view reads past the input's " + std::to_string(numel) + " elements";
    last += (view.shape[d] - 1) * view.strides[d];
  }
  if (last >= numel) return "the view reads past the input's " + std::to_string(numel) + " elements";
  return "";
}

std::string check_output_perm(const std::vector<int64_t>& perm, size_t rank) {
  if (perm.size() != rank) return "output_perm needs " + std::to_string(rank) + " entries";
  std::vector<char> seen(rank, 0);
  for (int64_t p : perm) {
    if (p < 0 || p >= int64_t(rank) || seen[size_t(p)]) return "output_perm is not a permutation";
    seen[size_t(p)] = 1;
  }
  if (rank > 0 && perm.back() != int64_t(rank) - 1) return "output_perm must keep the last dim last";
  return "";
}

}  // namespace segmux::ir
