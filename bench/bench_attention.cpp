// bench_attention: the fused segmux::Attention CPU kernel at the propagation decoder's shapes (from
// sam31::ModelConfig: Lq = token grid^2 image tokens, Lk = memory slots x Lq spatial keys + pointer
// slots x multiplex_count pointer tokens, attn_heads heads of d_model / attn_heads), in GFLOP/s against
// the FMA peak and our f32 MatMul (1024^3, B prepacked) measured in the same run, by wall time and by
// CPU time (GFLOP per CPU second of all threads against one core's peak: stable on a shared machine).
// Cases: memory cross-attention with every slot valid (the steady state) and with most slots padded
// (-1e30 key bias, the first frames of a video), the image self-attention, the detector's queries on
// the image tokens with a per-query bias (general mask), the ViT's global and windowed attention, the
// mask decoder's two-way attention (few tokens against the image tokens, both ways); the AVX2 tile
// too, and the bf16 tile (nodes compiled in bf16) against the bf16 dot peak where the CPU has
// AVX512_BF16. Usage: bench_attention [threads=2] [reps=3] [image_size=config] [avx2=1] [only=all|f32|bf16]
// (only: the tiles to run, for a quick before / after of one of them).
#include <omp.h>

#include <cstdlib>

#include "bench_common.h"
#include "kernels/cpu/simd.h"
#include "kernels/isa.h"
#include "models/sam31/config.h"
#include "models/sam31/propagation_decoder.h"

using namespace segmux;
using namespace segmux::bench;

namespace {

struct Timing {
  double median, min, cpu;  // wall seconds (median, min) and CPU seconds of all threads (median)
};

// `reps` timed calls after one warm-up call. The CPU time (all threads) is what a call costs when the
// machine is shared: wall time then mostly measures the other processes.
Timing time_median(const std::function<void()>& fn, int reps) {
  fn();
  std::vector<double> t, c;
  for (int i = 0; i < reps; ++i) {
    const double t0 = now_s(), c0 = cpu_s();
    fn();
    t.push_back(now_s() - t0);
    c.push_back(cpu_s() - c0);
  }
  std::sort(t.begin(), t.end());
  std::sort(c.begin(), c.end());
  return {t[t.size() / 2], t.front(), c[c.size() / 2]};
}

// Additive key bias [1, 1, 1, Lk]: 0 on the first `valid_mem` memory slots (of `slots` x L keys) and the
// first `valid_ptr` pointer slots (of M tokens each), -1e30 elsewhere, as the decoder builds it.
Tensor key_bias(int64_t slots, int64_t L, int64_t ptr_slots, int64_t M, int64_t valid_mem, int64_t valid_ptr) {
  const int64_t Lk = slots * L + ptr_slots * M;
  Tensor m(DType::f32, {1, 1, 1, Lk});
  float* p = m.data<float>();
  for (int64_t j = 0; j < Lk; ++j) {
    const bool valid = j < slots * L ? j / L < valid_mem : (j - slots * L) / M < valid_ptr;
    p[j] = valid ? 0.f : -1e30f;
  }
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const int reps = argc > 2 ? std::max(1, std::atoi(argv[2])) : 3;
  sam31::ModelConfig cfg;
  if (argc > 3) cfg.image_size = std::atoi(argv[3]);
  const bool with_avx2 = argc > 4 ? std::atoi(argv[4]) != 0 : true;
  const std::string only = argc > 5 ? argv[5] : "all";
  omp_set_num_threads(threads);
  print_load();
  const bool bf16 = cpu::attention_bf16_fns() != nullptr;
  const double peak = measure_peak(false, threads), core_peak = peak_per_cpu_second();
  const double peak16 = bf16 ? measure_peak(true, threads) : 0, core_peak16 = bf16 ? peak_per_cpu_second(true) : 0;
  Tensor ga = random_f32({1024, 1024}, 1), gb = random_f32({1024, 1024}, 2);
  NodeRunner mm(cpu_provider(), make_node("MatMul"), {ga, gb}, {false, true}, threads);
  const Timing tg = time_median([&] { mm.run(); }, 10);
  const double gflop_mm = 2.0 * 1024 * 1024 * 1024 / 1e9, gemm = gflop_mm / tg.median, gemm_core = gflop_mm / tg.cpu;

  const int64_t H = cfg.attn_heads, hd = cfg.d_model / cfg.attn_heads, L = cfg.memory_tokens_per_frame();
  const int64_t S = sam31::propagation_memory_slots(cfg), P = sam31::propagation_pointer_slots(cfg);
  const int64_t M = cfg.multiplex_count, Lk = S * L + P * M;
  std::printf(
      "bench_attention: %d thread(s), image %d: Lq %lld, Lk %lld (%lld memory slots x %lld + %lld pointer "
      "slots x %lld), %lld heads of %lld\n",
      threads, cfg.image_size, (long long)L, (long long)Lk, (long long)S, (long long)L, (long long)P, (long long)M,
      (long long)H, (long long)hd);
  std::printf("measured: f32 FMA peak %.1f GFLOP/s, our f32 MatMul 1024^3 %.1f GFLOP/s (%.1f%% of peak)\n", peak, gemm,
              100 * gemm / peak);
  std::printf("per CPU second (one core): FMA peak %.1f GFLOP/s, MatMul 1024^3 %.1f GFLOP/s (%.1f%% of peak)\n",
              core_peak, gemm_core, 100 * gemm_core / core_peak);
  if (bf16)
    std::printf("bf16 dot peak %.1f GFLOP/s, per CPU second %.1f GFLOP/s (bf16 rows: %% of these; %% GEMM: of f32)\n",
                peak16, core_peak16);
  std::printf("%-34s %-7s %9s %9s %9s %7s %7s %9s %7s %7s\n", "case", "isa", "median ms", "min ms", "GFLOP/s", "% peak",
              "% GEMM", "GF/cpu-s", "% peak", "% GEMM");

  Tensor q = random_f32({1, H, L, hd}, 11, -2.f, 2.f);
  Tensor k = random_f32({1, H, Lk, hd}, 12, -2.f, 2.f), v = random_f32({1, H, Lk, hd}, 13);
  Tensor ks = random_f32({1, H, L, hd}, 14, -2.f, 2.f), vs = random_f32({1, H, L, hd}, 15);
  // The detector's decoder cross-attention: num_queries queries on the image tokens with a per-query
  // additive bias (box relative position bias, [1, heads, queries, tokens]): the general-mask path.
  const int64_t NQ = cfg.num_queries;
  Tensor dq = random_f32({1, H, NQ, hd}, 16, -2.f, 2.f), rpb = random_f32({1, H, NQ, L}, 17, -4.f, 0.f);
  // The ViT's global blocks (every token, vit_heads heads of vit_dim / vit_heads) and windowed blocks
  // (vit_window^2 tokens per window, the padded grid's windows in the batch dim).
  const int64_t VH = cfg.vit_heads, vhd = cfg.vit_head_dim(), W2 = int64_t(cfg.vit_window) * cfg.vit_window;
  const int64_t nwin = ((cfg.token_grid() + cfg.vit_window - 1) / cfg.vit_window) *
                       ((cfg.token_grid() + cfg.vit_window - 1) / cfg.vit_window);
  Tensor vq = random_f32({1, VH, L, vhd}, 18, -2.f, 2.f), vk = random_f32({1, VH, L, vhd}, 19, -2.f, 2.f),
         vv = random_f32({1, VH, L, vhd}, 20);
  Tensor wq = random_f32({nwin, VH, W2, vhd}, 21, -2.f, 2.f), wk = random_f32({nwin, VH, W2, vhd}, 22, -2.f, 2.f),
         wv = random_f32({nwin, VH, W2, vhd}, 23);
  // The multiplex mask decoder's two-way transformer: M * (2 + multimask outputs) tokens against the
  // image tokens, both ways, at d_model / twoway_attn_downsample split in attn_heads heads.
  const int64_t NT = M * (2 + cfg.num_multimask_outputs), thd = cfg.d_model / cfg.twoway_attn_downsample / H;
  Tensor tq = random_f32({1, H, NT, thd}, 24, -2.f, 2.f), tk = random_f32({1, H, NT, thd}, 25, -2.f, 2.f);
  Tensor iq = random_f32({1, H, L, thd}, 26, -2.f, 2.f), ik = random_f32({1, H, L, thd}, 27, -2.f, 2.f);
  struct Case {
    const char* name;
    std::vector<Tensor> in;
    int64_t lk;
  };
  const std::vector<Case> cases = {
      {"cross, all slots valid", {q, k, v, key_bias(S, L, P, M, S, P)}, Lk},
      {"cross, 1+2 memory / 3 ptr slots", {q, k, v, key_bias(S, L, P, M, 3, 3)}, Lk},
      {"self (image tokens)", {q, ks, vs}, L},
      {"detector queries, per-query bias", {dq, ks, vs, rpb}, L},
      {"ViT global block", {vq, vk, vv}, L},
      {"ViT windowed block", {wq, wk, wv}, W2},
      {"two-way: tokens to image", {tq, ik, ik}, L},
      {"two-way: image to tokens", {iq, tk, tk}, NT},
  };
  const Isa native = active_isa();
  struct Variant {
    Isa isa;
    bool bf16;
  };
  std::vector<Variant> variants;
  if (only != "bf16") variants.push_back({native, false});
  if (bf16 && only != "f32") variants.push_back({native, true});
  if (only != "bf16" && with_avx2 && native != Isa::avx2 && int(cpu_isa()) >= int(Isa::avx2))
    variants.push_back({Isa::avx2, false});
  for (const Case& c : cases)
    for (const Variant& var : variants) {
      const Isa isa = var.isa;
      set_active_isa(isa);  // the kernel picks its loops at creation
      std::vector<bool> constant(c.in.size(), false);
      std::map<std::string, ir::AttrValue> attrs;
      if (var.bf16) attrs["segmux_precision"] = std::string("bf16");
      NodeRunner att(cpu_provider(), make_node("Attention", attrs, "segmux"), c.in, constant, threads);
      // FLOPs of the whole q k^T and p v products (padded keys included: the figure is per call).
      const Shape& qs = c.in[0].shape();
      const double flops = 4.0 * double(qs[0] * qs[1] * qs[2]) * double(c.lk) * double(qs[3]);
      const int r = isa == native ? reps : 1;  // the AVX2 tile once: it is slow
      const Timing tm = time_median([&] { att.run(); }, r);
      const double g = flops / tm.median / 1e9, gc = flops / tm.cpu / 1e9;
      const double pk = var.bf16 ? peak16 : peak, cpk = var.bf16 ? core_peak16 : core_peak;
      const std::string name = var.bf16 ? "bf16" : isa_name(isa);
      std::printf("%-34s %-7s %9.1f %9.1f %9.1f %6.1f%% %6.1f%% %9.1f %6.1f%% %6.1f%%\n", c.name, name.c_str(),
                  1e3 * tm.median, 1e3 * tm.min, g, 100 * g / pk, 100 * g / gemm, gc, 100 * gc / cpk,
                  100 * gc / gemm_core);
      std::fflush(stdout);
    }
  set_active_isa(native);
  print_load();
  return 0;
}
