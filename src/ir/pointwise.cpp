#include "ir/pointwise.h"

#include <sstream>

namespace segmux::ir {

namespace {
constexpr struct {
  PointwiseOp op;
  const char* name;
} kOps[] = {{PointwiseOp::add, "Add"}, {PointwiseOp::sub, "Sub"},   {PointwiseOp::mul, "Mul"},
            {PointwiseOp::div, "Div"}, {PointwiseOp::relu, "Relu"}, {PointwiseOp::sigmoid, "Sigmoid"}};
constexpr const char* kOperandFirst = ".r";
}  // namespace

const char* pointwise_onnx_op(PointwiseOp op) {
  for (const auto& e : kOps)
    if (e.op == op) return e.name;
  return "?";
}

bool pointwise_op_of(const std::string& onnx_op, PointwiseOp* op) {
  for (const auto& e : kOps)
    if (onnx_op == e.name) {
      *op = e.op;
      return true;
    }
  return false;
}

bool parse_pointwise_steps(const std::string& steps, std::vector<PointwiseStep>* out, std::string* error) {
  out->clear();
  std::stringstream in(steps);
  std::string name;
  while (std::getline(in, name, ',')) {
    PointwiseStep s;
    const size_t suffix = std::string(kOperandFirst).size();
    if (name.size() > suffix && name.compare(name.size() - suffix, suffix, kOperandFirst) == 0) {
      s.operand_first = true;
      name.resize(name.size() - suffix);
    }
    if (!pointwise_op_of(name, &s.op)) {
      *error = "unknown step '" + name + "'";
      return false;
    }
    if (s.operand_first && !s.binary()) {
      *error = "step '" + name + "' takes no operand to put first";
      return false;
    }
    out->push_back(s);
  }
  if (out->empty()) *error = "no steps";
  return !out->empty();
}

std::string format_pointwise_steps(const std::vector<PointwiseStep>& steps) {
  std::string s;
  for (const PointwiseStep& step : steps) {
    if (!s.empty()) s += ',';
    s += pointwise_onnx_op(step.op);
    if (step.operand_first) s += kOperandFirst;
  }
  return s;
}

}  // namespace segmux::ir
