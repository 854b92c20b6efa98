// Element-wise nodes on the CUDA provider: every f32 unary/binary op, Clip and segmux Gelu are one-step
// Pointwise programs; segmux Pointwise runs its whole chain in one kernel. Comparisons, Where, Not, Cast.
#include <cmath>

#include "ir/pointwise.h"
#include "ir/precision.h"
#include "kernels/cuda/cuda_ops.h"

namespace segmux::cuda::ops {

namespace {

const std::map<std::string, Step>& unary_steps() {
  static const std::map<std::string, Step> m = {{"Relu", Step::relu}, {"Sigmoid", Step::sigmoid},
                                                {"Sqrt", Step::sqrt}, {"Abs", Step::abs},
                                                {"Neg", Step::neg},   {"Sin", Step::sin},
                                                {"Cos", Step::cos},   {"Log", Step::log},
                                                {"Exp", Step::exp},   {"Erf", Step::erf},
                                                {"Sign", Step::sign}, {"Floor", Step::floor},
                                                {"Ceil", Step::ceil}, {"Reciprocal", Step::reciprocal},
                                                {"Tanh", Step::tanh}};
  return m;
}

const std::map<std::string, Step>& binary_steps() {
  static const std::map<std::string, Step> m = {{"Add", Step::add}, {"Sub", Step::sub}, {"Mul", Step::mul},
                                                {"Div", Step::div}, {"Pow", Step::pow}, {"Max", Step::max},
                                                {"Min", Step::min}};
  return m;
}

Step pointwise_step(ir::PointwiseOp op) {
  switch (op) {
    case ir::PointwiseOp::add:
      return Step::add;
    case ir::PointwiseOp::sub:
      return Step::sub;
    case ir::PointwiseOp::mul:
      return Step::mul;
    case ir::PointwiseOp::div:
      return Step::div;
    case ir::PointwiseOp::sigmoid:
      return Step::sigmoid;
    default:
      return Step::relu;
  }
}

Step gelu_step(const ir::Node& n) {
  const bool in = n.attr_int(ir::kGeluRoundInput, 0) != 0, out = n.attr_int(ir::kGeluRoundOutput, 0) != 0;
  return in && out ? Step::gelu_round_both : in ? Step::gelu_round_in : out ? Step::gelu_round_out : Step::gelu;
}

// Runs `prog` with the node's present inputs as operands (input 0 = the running value).
std::unique_ptr<Kernel> program_kernel(PointwiseProgram prog, std::vector<size_t> operand_inputs, const char* name) {
  return launch_kernel(
      [prog, operand_inputs](KernelContext& ctx, Stream s) {
        Tensor& y = *ctx.outputs[0];
        std::vector<Shape> shapes;
        std::vector<const float*> ptrs;
        for (size_t k : operand_inputs) {
          shapes.push_back(ctx.inputs[k]->shape());
          ptrs.push_back(static_cast<const float*>(ctx.inputs[k]->raw()));
        }
        const Broadcast b = make_broadcast(y.shape(), shapes);
        check_cuda(launch_pointwise(prog, b, int(ptrs.size()), ptrs.data(), static_cast<float*>(y.raw()), y.numel(), s),
                   "launch");
      },
      name);
}

std::string f32_only(const KernelInit& init) { return inputs_are(init, DType::f32) ? "" : dtype_reason(init, "f32"); }

// Shape arithmetic left in a graph (the point decoder's index sums): both inputs i64, or both i32.
bool integer_binary(const KernelInit& init) { return inputs_are(init, DType::i64) || inputs_are(init, DType::i32); }

std::unique_ptr<Kernel> integer_binary_kernel(Step st) {
  return launch_kernel(
      [st](KernelContext& ctx, Stream s) {
        const Tensor &a = *ctx.inputs[0], &b = *ctx.inputs[1];
        Tensor& y = *ctx.outputs[0];
        const ScalarKind kind = a.dtype() == DType::i64 ? ScalarKind::i64 : ScalarKind::i32;
        check_cuda(launch_int_binary(st, kind, make_broadcast(y.shape(), {a.shape(), b.shape()}), a.raw(), b.raw(),
                                     y.raw(), y.numel(), s),
                   "launch");
      },
      "integer binary");
}

void add_unary_and_binary(OpTable& t) {
  for (const auto& [op, step] : unary_steps()) {
    const Step st = step;
    t[op] = {f32_only, [st](const KernelInit&, Fp32Gemm) {
               PointwiseProgram p;
               p.count = 1;
               p.step[0] = st;
               return program_kernel(p, {0}, "unary");
             }};
  }
  for (const auto& [op, step] : binary_steps()) {
    const Step st = step;
    t[op] = {[st](const KernelInit& init) {
               if (init.inputs.size() != 2 || !init.inputs[0] || !init.inputs[1])
                 return std::string("the CUDA kernel takes exactly two inputs");
               if (integer_binary(init) && st != Step::div && st != Step::pow) return std::string();
               return f32_only(init);
             },
             [st](const KernelInit& init, Fp32Gemm) {
               if (integer_binary(init)) return integer_binary_kernel(st);
               PointwiseProgram p;
               p.count = 1;
               p.step[0] = st;
               return program_kernel(p, {0, 1}, "binary");
             }};
  }
  t["segmux.Gelu"] = {f32_only, [](const KernelInit& init, Fp32Gemm) {
                        PointwiseProgram p;
                        p.count = 1;
                        p.step[0] = gelu_step(init.node);
                        return program_kernel(p, {0}, "gelu");
                      }};
  // Clip's bounds are inputs 1 and 2 (optional); the kernel needs them constant (they are, after folding).
  t["Clip"] = {[](const KernelInit& init) {
                 for (size_t k : {size_t(1), size_t(2)})
                   if (in_type(init, k) && !in_const(init, k)) return std::string("Clip bounds must be constants");
                 return f32_only(init);
               },
               [](const KernelInit& init, Fp32Gemm) {
                 PointwiseProgram p;
                 p.count = 1;
                 p.step[0] = Step::clip;
                 p.alpha = in_const(init, 1) ? float(in_const(init, 1)->get_as_double(0)) : -INFINITY;
                 p.beta = in_const(init, 2) ? float(in_const(init, 2)->get_as_double(0)) : INFINITY;
                 return program_kernel(p, {0}, "clip");
               }};
}

void add_pointwise(OpTable& t) {
  t["segmux.Pointwise"] = {
      [](const KernelInit& init) {
        std::vector<ir::PointwiseStep> steps;
        std::string error;
        if (!ir::parse_pointwise_steps(init.node.attr_string(ir::kPointwiseSteps, ""), &steps, &error)) return error;
        if (steps.size() > size_t(kMaxSteps)) return "more than " + std::to_string(kMaxSteps) + " steps";
        if (init.inputs.size() > size_t(kMaxOperands))
          return "more than " + std::to_string(kMaxOperands - 1) + " operands";
        return f32_only(init);
      },
      [](const KernelInit& init, Fp32Gemm) {
        std::vector<ir::PointwiseStep> steps;
        std::string error;
        ir::parse_pointwise_steps(init.node.attr_string(ir::kPointwiseSteps, ""), &steps, &error);
        PointwiseProgram p;
        p.count = int(steps.size());
        for (size_t i = 0; i < steps.size(); ++i) {
          p.step[i] = pointwise_step(steps[i].op);
          p.operand_first[i] = steps[i].operand_first ? 1 : 0;
        }
        std::vector<size_t> operands;
        for (size_t k = 0; k < init.inputs.size(); ++k) operands.push_back(k);
        return program_kernel(p, operands, "pointwise");
      }};
}

void add_compare_where_cast(OpTable& t) {
  const std::map<std::string, Compare> compares = {{"Equal", Compare::equal},
                                                   {"Greater", Compare::greater},
                                                   {"Less", Compare::less},
                                                   {"GreaterOrEqual", Compare::greater_equal},
                                                   {"LessOrEqual", Compare::less_equal}};
  for (const auto& [op, cmp] : compares) {
    const Compare c = cmp;
    t[op] = {[](const KernelInit& init) {
               const DType d = init.inputs[0]->dtype;
               if (d != DType::f32 && d != DType::i64 && d != DType::i32 && d != DType::boolean)
                 return dtype_reason(init, "f32, i64, i32 or bool");
               return inputs_are(init, d) ? std::string() : dtype_reason(init, "two equal-typed");
             },
             [c](const KernelInit&, Fp32Gemm) {
               return launch_kernel(
                   [c](KernelContext& ctx, Stream s) {
                     const Tensor &a = *ctx.inputs[0], &b = *ctx.inputs[1];
                     Tensor& y = *ctx.outputs[0];
                     ScalarKind kind = ScalarKind::f32;
                     scalar_kind_of(a.dtype(), &kind);
                     const Broadcast br = make_broadcast(y.shape(), {a.shape(), b.shape()});
                     check_cuda(
                         launch_compare(c, kind, br, a.raw(), b.raw(), static_cast<uint8_t*>(y.raw()), y.numel(), s),
                         "launch");
                   },
                   "compare");
             }};
  }
  t["Where"] = {[](const KernelInit& init) {
                  if (init.inputs[0]->dtype != DType::boolean || init.inputs[1]->dtype != init.inputs[2]->dtype)
                    return dtype_reason(init, "(bool, T, T)");
                  return std::string();
                },
                [](const KernelInit&, Fp32Gemm) {
                  return launch_kernel(
                      [](KernelContext& ctx, Stream s) {
                        const Tensor &c = *ctx.inputs[0], &x = *ctx.inputs[1], &y = *ctx.inputs[2];
                        Tensor& out = *ctx.outputs[0];
                        const Broadcast b = make_broadcast(out.shape(), {c.shape(), x.shape(), y.shape()});
                        check_cuda(launch_where(b, static_cast<const uint8_t*>(c.raw()), x.raw(), y.raw(), out.raw(),
                                                int(dtype_size(x.dtype())), out.numel(), s),
                                   "launch");
                      },
                      "where");
                }};
  t["Not"] = {[](const KernelInit& init) {
                return inputs_are(init, DType::boolean) ? std::string() : dtype_reason(init, "bool");
              },
              [](const KernelInit&, Fp32Gemm) {
                return launch_kernel(
                    [](KernelContext& ctx, Stream s) {
                      check_cuda(launch_not(static_cast<const uint8_t*>(ctx.inputs[0]->raw()),
                                            static_cast<uint8_t*>(ctx.outputs[0]->raw()), ctx.outputs[0]->numel(), s),
                                 "launch");
                    },
                    "not");
              }};
  t["Cast"] = {
      [](const KernelInit& init) {
        ScalarKind a, b;
        if (!scalar_kind_of(init.inputs[0]->dtype, &a) || !scalar_kind_of(init.outputs[0].dtype, &b))
          return std::string("the CUDA Cast has no f16");
        return std::string();
      },
      [](const KernelInit&, Fp32Gemm) {
        return launch_kernel(
            [](KernelContext& ctx, Stream s) {
              ScalarKind from = ScalarKind::f32, to = ScalarKind::f32;
              scalar_kind_of(ctx.inputs[0]->dtype(), &from);
              scalar_kind_of(ctx.outputs[0]->dtype(), &to);
              check_cuda(launch_cast(from, to, ctx.inputs[0]->raw(), ctx.outputs[0]->raw(), ctx.outputs[0]->numel(), s),
                         "launch");
            },
            "cast");
      }};
}

}  // namespace

void add_elementwise_ops(OpTable& table) {
  add_unary_and_binary(table);
  add_pointwise(table);
  add_compare_where_cast(table);
}

}  // namespace segmux::cuda::ops
