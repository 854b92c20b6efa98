// Reference kernels of element-wise ops: unary math and activations, broadcasting binary ops,
// variadic ops, comparisons, logic, Where, Clip, Cast, Identity, Dropout.
#include <algorithm>
#include <functional>

#include "ir/schemas/schemas.h"
#include "kernels/reference/ref_common.h"

namespace segmux::ref {

namespace {

// ---- unary -------------------------------------------------------------------------------------

// Float unary ops are computed in double and rounded once.
using UnaryD = std::function<double(double, const ir::Node&)>;

void unary_float(const std::string& op, double (*f)(double, const ir::Node&)) {
  reg(op, [f](KernelContext& ctx) {
    const Tensor& x = in(ctx, 0);
    Tensor& y = out(ctx, 0);
    dispatch_float(ctx, x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T* a = x.data<T>();
      T* b = y.data<T>();
      for (int64_t i = 0, n = x.numel(); i < n; ++i) b[i] = T(f(double(a[i]), ctx.node));
    });
  });
}

double sigmoid(double x) { return x >= 0 ? 1.0 / (1.0 + std::exp(-x)) : std::exp(x) / (1.0 + std::exp(x)); }

template <typename T>
T int_abs(T v) {
  if constexpr (std::is_signed_v<T>)
    return v < 0 ? T(-uint64_t(v)) : v;  // wraps for the minimum
  else
    return v;
}

// Unary ops defined for ints too (Relu, Neg, Abs, Sign).
template <typename Op>
void unary_numeric(const std::string& name, Op op) {
  reg(name, [op](KernelContext& ctx) {
    const Tensor& x = in(ctx, 0);
    Tensor& y = out(ctx, 0);
    dispatch_numeric(ctx, x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T* a = x.data<T>();
      T* b = y.data<T>();
      for (int64_t i = 0, n = x.numel(); i < n; ++i) b[i] = op(a[i], ctx.node);
    });
  });
}

// ---- binary ------------------------------------------------------------------------------------

template <typename T>
T wrap_add(T a, T b) {
  return T(uint64_t(a) + uint64_t(b));
}
template <typename T>
T wrap_sub(T a, T b) {
  return T(uint64_t(a) - uint64_t(b));
}
template <typename T>
T wrap_mul(T a, T b) {
  return T(uint64_t(a) * uint64_t(b));
}

template <typename T>
T int_div(const KernelContext& ctx, T a, T b) {
  if (b == 0) kfail(ctx, "integer division by zero");
  if constexpr (std::is_signed_v<T>) {
    if (b == T(-1)) return T(-uint64_t(a));  // avoids the overflow of MIN / -1
  }
  return T(a / b);
}

template <typename T>
T int_mod(const KernelContext& ctx, T a, T b, bool c_style) {
  if (b == 0) kfail(ctx, "integer modulo by zero");
  if constexpr (std::is_signed_v<T>) {
    if (b == T(-1)) return 0;
    T r = T(a % b);
    if (!c_style && r != 0 && ((r < 0) != (b < 0))) r = T(r + b);
    return r;
  } else {
    return T(a % b);
  }
}

template <typename T>
T int_pow(T base, int64_t e) {
  if (e < 0) {
    if (base == 1) return 1;
    if constexpr (std::is_signed_v<T>) {
      if (base == T(-1)) return (e % 2) ? T(-1) : T(1);
    }
    return 0;
  }
  T r = 1;
  while (e > 0) {
    if (e & 1) r = wrap_mul(r, base);
    base = wrap_mul(base, base);
    e >>= 1;
  }
  return r;
}

// Binary op with numpy broadcasting: out[i] = f(a[.], b[.]).
template <typename TA, typename TB, typename TO, typename F>
void broadcast2(const Tensor& a, const Tensor& b, Tensor& y, F f) {
  const TA* pa = a.data<TA>();
  const TB* pb = b.data<TB>();
  TO* py = y.data<TO>();
  for_each_broadcast<2>(y.shape(), {a.shape(), b.shape()},
                        [&](int64_t i, const std::array<int64_t, 2>& o) { py[i] = f(pa[o[0]], pb[o[1]]); });
}

enum class Arith { add, sub, mul, div, mod };

void arith(const std::string& name, Arith kind) {
  reg(name, [kind](KernelContext& ctx) {
    const Tensor& a = in(ctx, 0);
    const Tensor& b = in(ctx, 1);
    Tensor& y = out(ctx, 0);
    const bool c_mod = ctx.node.attr_int("fmod", 0) != 0;
    dispatch_numeric(ctx, a.dtype(), [&](auto tag) {
      using T = decltype(tag);
      broadcast2<T, T, T>(a, b, y, [&](T u, T v) -> T {
        if constexpr (std::is_floating_point_v<T>) {
          switch (kind) {
            case Arith::add:
              return u + v;
            case Arith::sub:
              return u - v;
            case Arith::mul:
              return u * v;
            case Arith::div:
              return u / v;
            case Arith::mod: {
              T r = std::fmod(u, v);
              if (!c_mod && r != 0 && ((r < 0) != (v < 0))) r += v;
              return r;
            }
          }
          return 0;
        } else {
          switch (kind) {
            case Arith::add:
              return wrap_add(u, v);
            case Arith::sub:
              return wrap_sub(u, v);
            case Arith::mul:
              return wrap_mul(u, v);
            case Arith::div:
              return int_div(ctx, u, v);
            case Arith::mod:
              return int_mod(ctx, u, v, c_mod);
          }
          return 0;
        }
      });
    });
  });
}

void pow_kernel(KernelContext& ctx) {
  const Tensor& a = in(ctx, 0);
  const Tensor& b = in(ctx, 1);
  Tensor& y = out(ctx, 0);
  dispatch_numeric(ctx, a.dtype(), [&](auto ta) {
    using TA = decltype(ta);
    dispatch_numeric(ctx, b.dtype(), [&](auto tb) {
      using TB = decltype(tb);
      broadcast2<TA, TB, TA>(a, b, y, [](TA u, TB v) -> TA {
        constexpr bool both_int = !std::is_floating_point_v<TA> && !std::is_floating_point_v<TB>;
        if constexpr (both_int) return int_pow<TA>(u, int64_t(v));
        return saturate_cast<TA>(std::pow(double(u), double(v)));
      });
    });
  });
}

enum class Cmp { eq, lt, gt, le, ge };

void compare(const std::string& name, Cmp kind) {
  reg(name, [kind](KernelContext& ctx) {
    const Tensor& a = in(ctx, 0);
    const Tensor& b = in(ctx, 1);
    Tensor& y = out(ctx, 0);
    dispatch(ctx, a.dtype(), [&](auto tag) {
      using T = decltype(tag);
      broadcast2<T, T, bool>(a, b, y, [&](T u, T v) -> bool {
        switch (kind) {
          case Cmp::eq:
            return u == v;
          case Cmp::lt:
            return u < v;
          case Cmp::gt:
            return u > v;
          case Cmp::le:
            return u <= v;
          case Cmp::ge:
            return u >= v;
        }
        return false;
      });
    });
  });
}

void logic(const std::string& name, std::function<bool(bool, bool)> f) {
  reg(name, [f](KernelContext& ctx) {
    const Tensor& a = in(ctx, 0);
    const Tensor& b = in(ctx, 1);
    if (a.dtype() != DType::boolean || b.dtype() != DType::boolean) kfail(ctx, "inputs must be bool");
    broadcast2<bool, bool, bool>(a, b, out(ctx, 0), f);
  });
}

// Variadic ops fold the inputs left to right with broadcasting (computed in double for floats).
enum class Fold { sum, mean, max, min };

void variadic(const std::string& name, Fold kind) {
  reg(name, [kind](KernelContext& ctx) {
    Tensor& y = out(ctx, 0);
    const size_t n = ctx.inputs.size();
    dispatch_numeric(ctx, y.dtype(), [&](auto tag) {
      using T = decltype(tag);
      using Acc = std::conditional_t<std::is_floating_point_v<T>, double, T>;
      std::vector<Acc> acc(size_t(y.numel()));
      for (size_t j = 0; j < n; ++j) {
        const Tensor& x = in(ctx, j);
        if (x.dtype() != y.dtype()) kfail(ctx, "inputs have different dtypes");
        const T* px = x.data<T>();
        for_each_broadcast<1>(y.shape(), {x.shape()}, [&](int64_t i, const std::array<int64_t, 1>& o) {
          Acc v = Acc(px[o[0]]);
          Acc& a = acc[size_t(i)];
          if (j == 0) {
            a = v;
            return;
          }
          switch (kind) {
            case Fold::sum:
            case Fold::mean:
              if constexpr (std::is_floating_point_v<Acc>)
                a += v;
              else
                a = wrap_add(a, v);
              break;
            case Fold::max:
              if constexpr (std::is_floating_point_v<Acc>)
                a = (std::isnan(a) || std::isnan(v)) ? NAN : std::max(a, v);
              else
                a = std::max(a, v);
              break;
            case Fold::min:
              if constexpr (std::is_floating_point_v<Acc>)
                a = (std::isnan(a) || std::isnan(v)) ? NAN : std::min(a, v);
              else
                a = std::min(a, v);
              break;
          }
        });
      }
      T* py = y.data<T>();
      for (size_t i = 0; i < acc.size(); ++i) {
        if constexpr (std::is_floating_point_v<T>)
          py[i] = T(kind == Fold::mean ? acc[i] / double(n) : acc[i]);
        else
          py[i] = acc[i];
      }
    });
  });
}

void where_kernel(KernelContext& ctx) {
  const Tensor& c = in(ctx, 0);
  const Tensor& a = in(ctx, 1);
  const Tensor& b = in(ctx, 2);
  Tensor& y = out(ctx, 0);
  const size_t es = dtype_size(y.dtype());
  const uint8_t* pc = static_cast<const uint8_t*>(c.raw());
  const std::byte* pa = static_cast<const std::byte*>(a.raw());
  const std::byte* pb = static_cast<const std::byte*>(b.raw());
  std::byte* py = static_cast<std::byte*>(y.raw());
  for_each_broadcast<3>(y.shape(), {c.shape(), a.shape(), b.shape()}, [&](int64_t i, const std::array<int64_t, 3>& o) {
    const std::byte* src = pc[o[0]] ? pa + size_t(o[1]) * es : pb + size_t(o[2]) * es;
    std::memcpy(py + size_t(i) * es, src, es);
  });
}

void clip_kernel(KernelContext& ctx) {
  const Tensor& x = in(ctx, 0);
  Tensor& y = out(ctx, 0);
  dispatch_numeric(ctx, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T lo = std::numeric_limits<T>::lowest(), hi = std::numeric_limits<T>::max();
    if constexpr (std::is_floating_point_v<T>) {
      lo = -std::numeric_limits<T>::infinity();
      hi = std::numeric_limits<T>::infinity();
    }
    if (has_in(ctx, 1)) {
      if (in(ctx, 1).numel() != 1) kfail(ctx, "min must be a scalar");
      lo = in(ctx, 1).data<T>()[0];
    }
    if (has_in(ctx, 2)) {
      if (in(ctx, 2).numel() != 1) kfail(ctx, "max must be a scalar");
      hi = in(ctx, 2).data<T>()[0];
    }
    const T* a = x.data<T>();
    T* b = y.data<T>();
    // Like std::min(max(x, lo), hi): NaN inputs stay NaN.
    for (int64_t i = 0, n = x.numel(); i < n; ++i) {
      T v = a[i];
      if (v < lo) v = lo;
      if (v > hi) v = hi;
      b[i] = v;
    }
  });
}

void prelu_kernel(KernelContext& ctx) {
  const Tensor& x = in(ctx, 0);
  const Tensor& s = in(ctx, 1);
  dispatch_numeric(ctx, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    broadcast2<T, T, T>(x, s, out(ctx, 0), [](T v, T k) -> T { return v < 0 ? T(v * k) : v; });
  });
}

// ---- Cast --------------------------------------------------------------------------------------

// Loads element i of any tensor as S (16-bit floats as float).
template <typename D>
void cast_into(const KernelContext& ctx, const Tensor& x, Tensor& y) {
  const int64_t n = x.numel();
  auto store = [&](auto load) {
    if constexpr (std::is_same_v<D, uint16_t>) {
      uint16_t* py = y.data<uint16_t>();
      const bool bf = y.dtype() == DType::bf16;
      for (int64_t i = 0; i < n; ++i) {
        float f = saturate_cast<float>(load(i));
        py[i] = bf ? f32_to_bf16(f) : f32_to_f16(f);
      }
    } else {
      D* py = y.data<D>();
      for (int64_t i = 0; i < n; ++i) py[i] = saturate_cast<D>(load(i));
    }
  };
  switch (x.dtype()) {
    case DType::f16: {
      const uint16_t* p = x.data<uint16_t>();
      return store([p](int64_t i) { return f16_to_f32(p[i]); });
    }
    case DType::bf16: {
      const uint16_t* p = x.data<uint16_t>();
      return store([p](int64_t i) { return bf16_to_f32(p[i]); });
    }
    case DType::boolean: {
      const uint8_t* p = static_cast<const uint8_t*>(x.raw());
      return store([p](int64_t i) { return uint8_t(p[i] != 0); });
    }
    default:
      dispatch(ctx, x.dtype(), [&](auto tag) {
        using S = decltype(tag);
        const S* p = x.data<S>();
        store([p](int64_t i) { return p[i]; });
      });
  }
}

void cast_to(const KernelContext& ctx, const Tensor& x, Tensor& y) {
  if (x.dtype() == y.dtype()) {
    if (x.nbytes()) std::memcpy(y.raw(), x.raw(), x.nbytes());
    return;
  }
  switch (y.dtype()) {
    case DType::f16:
    case DType::bf16:
      return cast_into<uint16_t>(ctx, x, y);
    default:
      dispatch(ctx, y.dtype(), [&](auto tag) { cast_into<decltype(tag)>(ctx, x, y); });
  }
}

void copy_kernel(KernelContext& ctx) {
  const Tensor& x = in(ctx, 0);
  Tensor& y = out(ctx, 0);
  if (x.nbytes()) std::memcpy(y.raw(), x.raw(), x.nbytes());
  if (wants_out(ctx, 1)) {  // Dropout mask: all true in inference
    Tensor& m = out(ctx, 1);
    std::memset(m.raw(), 1, m.nbytes());
  }
}

}  // namespace

void register_elementwise_reference() {
  using N = const ir::Node&;
  unary_float("Sqrt", [](double x, N) { return std::sqrt(x); });
  unary_float("Exp", [](double x, N) { return std::exp(x); });
  unary_float("Log", [](double x, N) { return std::log(x); });
  unary_float("Erf", [](double x, N) { return std::erf(x); });
  unary_float("Tanh", [](double x, N) { return std::tanh(x); });
  unary_float("Sigmoid", [](double x, N) { return sigmoid(x); });
  unary_float("Reciprocal", [](double x, N) { return 1.0 / x; });
  unary_float("Sin", [](double x, N) { return std::sin(x); });
  unary_float("Cos", [](double x, N) { return std::cos(x); });
  unary_float("Tan", [](double x, N) { return std::tan(x); });
  unary_float("Asin", [](double x, N) { return std::asin(x); });
  unary_float("Acos", [](double x, N) { return std::acos(x); });
  unary_float("Atan", [](double x, N) { return std::atan(x); });
  unary_float("Sinh", [](double x, N) { return std::sinh(x); });
  unary_float("Cosh", [](double x, N) { return std::cosh(x); });
  unary_float("Asinh", [](double x, N) { return std::asinh(x); });
  unary_float("Acosh", [](double x, N) { return std::acosh(x); });
  unary_float("Atanh", [](double x, N) { return std::atanh(x); });
  unary_float("Floor", [](double x, N) { return std::floor(x); });
  unary_float("Ceil", [](double x, N) { return std::ceil(x); });
  unary_float("Round", [](double x, N) { return std::nearbyint(x); });  // halves to even
  unary_float("Softsign", [](double x, N) { return x / (1.0 + std::fabs(x)); });
  unary_float("Softplus", [](double x, N) { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); });
  unary_float("HardSwish", [](double x, N) { return x * std::clamp(x / 6.0 + 0.5, 0.0, 1.0); });
  unary_float("HardSigmoid", [](double x, N n) {
    double a = n.attr_float("alpha", 0.2f), b = n.attr_float("beta", 0.5f);
    return std::clamp(a * x + b, 0.0, 1.0);
  });
  unary_float("LeakyRelu", [](double x, N n) { return x < 0 ? double(n.attr_float("alpha", 0.01f)) * x : x; });
  unary_float("Elu", [](double x, N n) { return x < 0 ? double(n.attr_float("alpha", 1.0f)) * std::expm1(x) : x; });
  unary_float("Selu", [](double x, N n) {
    double a = n.attr_float("alpha", 1.67326319217681884765625f), g = n.attr_float("gamma", 1.05070102214813232421875f);
    return x > 0 ? g * x : g * a * std::expm1(x);
  });
  unary_float("Celu", [](double x, N n) {
    double a = n.attr_float("alpha", 1.0f);
    return std::max(0.0, x) + std::min(0.0, a * std::expm1(x / a));
  });
  unary_float("ThresholdedRelu", [](double x, N n) { return x > double(n.attr_float("alpha", 1.0f)) ? x : 0.0; });

  unary_numeric("Relu", [](auto v, N) { return v > 0 ? v : decltype(v)(0); });
  unary_numeric("Neg", [](auto v, N) {
    using T = decltype(v);
    if constexpr (std::is_floating_point_v<T>)
      return T(-v);
    else
      return T(-uint64_t(v));
  });
  unary_numeric("Abs", [](auto v, N) {
    using T = decltype(v);
    if constexpr (std::is_floating_point_v<T>)
      return T(std::fabs(v));
    else
      return int_abs(v);
  });
  unary_numeric("Sign", [](auto v, N) {
    using T = decltype(v);
    return T(v > 0 ? 1 : (v < 0 ? -1 : 0));
  });
  unary_numeric("Shrink", [](auto v, N n) {
    using T = decltype(v);
    double l = n.attr_float("lambd", 0.5f), b = n.attr_float("bias", 0.0f), x = double(v);
    return saturate_cast<T>(x < -l ? x + b : (x > l ? x - b : 0.0));
  });

  arith("Add", Arith::add);
  arith("Sub", Arith::sub);
  arith("Mul", Arith::mul);
  arith("Div", Arith::div);
  arith("Mod", Arith::mod);
  reg("Pow", pow_kernel);
  reg("PRelu", prelu_kernel);
  compare("Equal", Cmp::eq);
  compare("Less", Cmp::lt);
  compare("Greater", Cmp::gt);
  compare("LessOrEqual", Cmp::le);
  compare("GreaterOrEqual", Cmp::ge);
  logic("And", [](bool a, bool b) { return a && b; });
  logic("Or", [](bool a, bool b) { return a || b; });
  logic("Xor", [](bool a, bool b) { return a != b; });
  reg("Not", [](KernelContext& ctx) {
    const Tensor& x = in(ctx, 0);
    const uint8_t* a = static_cast<const uint8_t*>(x.raw());
    uint8_t* b = static_cast<uint8_t*>(out(ctx, 0).raw());
    for (int64_t i = 0, n = x.numel(); i < n; ++i) b[i] = a[i] == 0;
  });
  variadic("Sum", Fold::sum);
  variadic("Mean", Fold::mean);
  variadic("Max", Fold::max);
  variadic("Min", Fold::min);
  register_reference_kernel_fn("", "Where", where_kernel);  // byte-wise: any dtype, no upcast
  reg("Clip", clip_kernel);
  reg("IsNaN", [](KernelContext& ctx) {
    const Tensor& x = in(ctx, 0);
    bool* b = out(ctx, 0).data<bool>();
    dispatch_float(ctx, x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T* a = x.data<T>();
      for (int64_t i = 0, n = x.numel(); i < n; ++i) b[i] = std::isnan(a[i]);
    });
  });
  reg("IsInf", [](KernelContext& ctx) {
    const Tensor& x = in(ctx, 0);
    bool* b = out(ctx, 0).data<bool>();
    const bool neg = ctx.node.attr_int("detect_negative", 1) != 0, pos = ctx.node.attr_int("detect_positive", 1) != 0;
    dispatch_float(ctx, x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T* a = x.data<T>();
      for (int64_t i = 0, n = x.numel(); i < n; ++i) b[i] = std::isinf(a[i]) && (a[i] > 0 ? pos : neg);
    });
  });
  // Cast handles 16-bit floats itself (no upcast wrapper): rounding straight from the source type.
  register_reference_kernel_fn("", "Cast", [](KernelContext& ctx) { cast_to(ctx, in(ctx, 0), out(ctx, 0)); });
  register_reference_kernel_fn("", "CastLike", [](KernelContext& ctx) { cast_to(ctx, in(ctx, 0), out(ctx, 0)); });
  register_reference_kernel_fn("", "Identity", copy_kernel);
  register_reference_kernel_fn("", "Dropout", copy_kernel);
}

}  // namespace segmux::ref
