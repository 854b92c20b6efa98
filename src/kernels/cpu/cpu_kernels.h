// Factories of the optimized CPU kernels. Each returns nullptr when it does not handle the node with
// these types (the session then falls back to the reference kernel).
#pragma once
#include <memory>

#include "kernels/kernel.h"

namespace segmux::cpu {

// oneDNN (onednn_matmul.cpp, onednn_conv.cpp).
std::unique_ptr<Kernel> make_matmul(const KernelInit& init);          // ONNX MatMul
std::unique_ptr<Kernel> make_gemm(const KernelInit& init);            // ONNX Gemm
std::unique_ptr<Kernel> make_linear(const KernelInit& init);          // segmux Linear
std::unique_ptr<Kernel> make_conv(const KernelInit& init);            // ONNX Conv
std::unique_ptr<Kernel> make_conv_transpose(const KernelInit& init);  // ONNX ConvTranspose
// Whether oneDNN offers Winograd convolutions on this CPU (AVX-512; also capped by ONEDNN_MAX_CPU_ISA).
bool onednn_has_winograd();

// Our vectorised kernels (inner loops per instruction-set level: simd.h).
std::unique_ptr<Kernel> make_binary(const KernelInit& init);       // Add, Sub, Mul, Div (f32)
std::unique_ptr<Kernel> make_gelu(const KernelInit& init);         // segmux Gelu
std::unique_ptr<Kernel> make_pointwise(const KernelInit& init);    // segmux Pointwise (f32)
std::unique_ptr<Kernel> make_expand(const KernelInit& init);       // ONNX Expand (any dtype)
std::unique_ptr<Kernel> make_softmax(const KernelInit& init);      // ONNX Softmax (opset 13+)
std::unique_ptr<Kernel> make_layer_norm(const KernelInit& init);   // ONNX LayerNormalization
std::unique_ptr<Kernel> make_group_norm(const KernelInit& init);   // segmux GroupNorm
std::unique_ptr<Kernel> make_transpose(const KernelInit& init);    // ONNX Transpose
std::unique_ptr<Kernel> make_attention(const KernelInit& init);    // segmux Attention
std::unique_ptr<Kernel> make_rope(const KernelInit& init);         // segmux Rope
std::unique_ptr<Kernel> make_split(const KernelInit& init);        // ONNX Split (any dtype)
std::unique_ptr<Kernel> make_concat(const KernelInit& init);       // ONNX Concat (any dtype)
std::unique_ptr<Kernel> make_sigmoid(const KernelInit& init);      // ONNX Sigmoid (f32)
std::unique_ptr<Kernel> make_reduce_mean(const KernelInit& init);  // ONNX ReduceMean over contiguous axes (f32)
std::unique_ptr<Kernel> make_resize(const KernelInit& init);       // ONNX Resize, mode nearest (f32)

}  // namespace segmux::cpu
