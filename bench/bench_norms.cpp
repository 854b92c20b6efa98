// bench_norms: LayerNormalization and Softmax (last axis) over rows x width (default 5184 x 1024, the
// SAM 3.1 ViT token count and width): our kernels (at the ISA level kernels/isa.h picks; SEGMUX_ISA
// lowers it) vs the plain reference kernels vs oneDNN's layer_normalization / softmax primitives, same
// thread count. Usage: bench_norms [threads=2] [rows] [width]
#include <omp.h>

#include <cstdlib>
#include <oneapi/dnnl/dnnl.hpp>

#include "bench_common.h"

using namespace segmux;
using namespace segmux::bench;

namespace {

double onednn_layer_norm(const Tensor& x, const Tensor& scale, const Tensor& bias, Tensor& y, int reps) {
  using dnnl::memory;
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream s(eng);
  memory::desc md({x.dim(0), x.dim(1)}, memory::data_type::f32, memory::format_tag::ab);
  memory::desc cmd({x.dim(1)}, memory::data_type::f32, memory::format_tag::a);
  auto flags = dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
  dnnl::layer_normalization_forward::primitive_desc pd(
      dnnl::layer_normalization_forward::desc(dnnl::prop_kind::forward_inference, md, 1e-5f, flags), eng);
  dnnl::layer_normalization_forward prim(pd);
  memory src(md, eng, const_cast<void*>(x.raw())), dst(md, eng, y.raw());
  memory sc(cmd, eng, const_cast<void*>(scale.raw())), sh(cmd, eng, const_cast<void*>(bias.raw()));
  return time_best(
      [&] {
        prim.execute(s, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}, {DNNL_ARG_SCALE, sc}, {DNNL_ARG_SHIFT, sh}});
        s.wait();
      },
      reps);
}

double onednn_softmax(const Tensor& x, Tensor& y, int reps) {
  using dnnl::memory;
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream s(eng);
  memory::desc md({x.dim(0), x.dim(1)}, memory::data_type::f32, memory::format_tag::ab);
  dnnl::softmax_forward::primitive_desc pd(dnnl::softmax_forward::desc(dnnl::prop_kind::forward_inference, md, 1), eng);
  dnnl::softmax_forward prim(pd);
  memory src(md, eng, const_cast<void*>(x.raw())), dst(md, eng, y.raw());
  return time_best(
      [&] {
        prim.execute(s, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
        s.wait();
      },
      reps);
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  double m = 0;
  for (int64_t i = 0; i < a.numel(); ++i) m = std::max(m, std::fabs(double(a.data<float>()[i]) - b.data<float>()[i]));
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const int64_t rows = argc > 2 ? std::atoll(argv[2]) : 5184, width = argc > 3 ? std::atoll(argv[3]) : 1024;
  omp_set_num_threads(threads);
  Tensor x = random_f32({rows, width}, 1, -4.f, 4.f);
  Tensor scale = random_f32({width}, 2, 0.5f, 1.5f), bias = random_f32({width}, 3);
  const double gbytes = 2.0 * double(x.nbytes()) / 1e9;  // read x, write y
  std::printf("bench_norms: %lld x %lld f32, %d thread(s); GB/s counts one read and one write\n", (long long)rows,
              (long long)width, threads);
  std::printf("%-10s %10s %10s %10s %10s %12s %12s\n", "op", "ours ms", "ref ms", "oneDNN ms", "ours GB/s", "ref/ours",
              "oneDNN/ours");

  {
    ir::Node n = make_node("LayerNormalization", {{"axis", int64_t(-1)}, {"epsilon", 1e-5f}});
    NodeRunner ours(cpu_provider(), n, {x, scale, bias}, {false, true, true}, threads);
    NodeRunner ref(reference_provider(), n, {x, scale, bias}, {false, true, true}, threads);
    const double t_ours = time_best([&] { ours.run(); }, 15);
    const double t_ref = time_best([&] { ref.run(); }, 3);
    Tensor y(DType::f32, x.shape());
    omp_set_num_threads(threads);
    const double t_dnnl = onednn_layer_norm(x, scale, bias, y, 15);
    std::printf("%-10s %10.3f %10.3f %10.3f %10.1f %12.2f %12.2f   (max |ours-ref| %.2e, |ours-oneDNN| %.2e)\n",
                "layernorm", t_ours * 1e3, t_ref * 1e3, t_dnnl * 1e3, gbytes / t_ours, t_ref / t_ours, t_dnnl / t_ours,
                max_abs_diff(ours.outputs[0], ref.outputs[0]), max_abs_diff(ours.outputs[0], y));
  }
  {
    ir::Node n = make_node("Softmax", {{"axis", int64_t(-1)}});
    NodeRunner ours(cpu_provider(), n, {x}, {false}, threads);
    NodeRunner ref(reference_provider(), n, {x}, {false}, threads);
    const double t_ours = time_best([&] { ours.run(); }, 15);
    const double t_ref = time_best([&] { ref.run(); }, 3);
    Tensor y(DType::f32, x.shape());
    omp_set_num_threads(threads);
    const double t_dnnl = onednn_softmax(x, y, 15);
    std::printf("%-10s %10.3f %10.3f %10.3f %10.1f %12.2f %12.2f   (max |ours-ref| %.2e, |ours-oneDNN| %.2e)\n",
                "softmax", t_ours * 1e3, t_ref * 1e3, t_dnnl * 1e3, gbytes / t_ours, t_ref / t_ours, t_dnnl / t_ours,
                max_abs_diff(ours.outputs[0], ref.outputs[0]), max_abs_diff(ours.outputs[0], y));
  }
  return 0;
}
