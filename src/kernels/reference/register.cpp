// Registers every reference kernel. Each op family lives in its own file and exposes a
// register_*_reference() function listed here.
#include "kernels/kernel.h"

namespace segmux {
namespace ref {
void register_elementwise_reference();
void register_shape_reference();
void register_index_reference();
void register_reduce_reference();
void register_linalg_reference();
void register_pool_reference();
void register_resize_reference();
void register_misc_reference();
void register_segmux_reference();  // segmux_ops.cpp: fused ops
}  // namespace ref

void register_reference_kernels() {
  ref::register_elementwise_reference();
  ref::register_shape_reference();
  ref::register_index_reference();
  ref::register_reduce_reference();
  ref::register_linalg_reference();
  ref::register_pool_reference();
  ref::register_resize_reference();
  ref::register_misc_reference();
  ref::register_segmux_reference();
}

}  // namespace segmux
