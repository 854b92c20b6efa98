// The step list of a segmux Pointwise node: a chain of element-wise ops fused by the compiler
// (compiler/passes/fuse_pointwise.cpp) so the value makes one trip through memory instead of one per op.
// Attribute `steps`: comma-separated op names applied in order to the running value, which starts as
// input 0. A binary step takes the next input as its other operand (value op operand); a name ending
// in ".r" puts the operand first (operand op value), for Sub and Div. Example: "Sigmoid,Mul,Add.r".
#pragma once
#include <string>
#include <vector>

namespace segmux::ir {

inline constexpr const char* kPointwiseSteps = "steps";

enum class PointwiseOp { add, sub, mul, div, sigmoid, relu };

struct PointwiseStep {
  PointwiseOp op = PointwiseOp::add;
  bool operand_first = false;  // operand op value (".r")
  bool binary() const { return op <= PointwiseOp::div; }
};

// The ONNX op a step computes ("Add", "Sigmoid", ...).
const char* pointwise_onnx_op(PointwiseOp op);
// The step for ONNX op `onnx_op`, false when Pointwise cannot take it.
bool pointwise_op_of(const std::string& onnx_op, PointwiseOp* op);

// Parses `steps`; false with *error set when a name is unknown, ".r" is put on a unary op or the list
// is empty.
bool parse_pointwise_steps(const std::string& steps, std::vector<PointwiseStep>* out, std::string* error);
std::string format_pointwise_steps(const std::vector<PointwiseStep>& steps);

}  // namespace segmux::ir
