# segmux_kernels (included by CMakeLists.txt in the route's order). Everything is built for baseline
# x86-64 except the files that hold wider instructions, which run only when the run-time dispatcher
# (src/kernels/isa.h: CPUID + XGETBV, SEGMUX_ISA) allows their level:
#   src/kernels/cpu/*_avx512.cpp  AVX-512 F/BW/DQ/VL (+ AVX2, FMA, F16C); *_bf16_avx512.cpp also BF16
#   src/kernels/cpu/*_avx2.cpp    AVX2, FMA, F16C
# Their code lives in namespace segmux::cpu::<level>; scripts/check_isa_objects.sh (ctest
# kernels_isa_objects) checks that no other function or static initialiser is compiled into them.
segmux_layer(segmux_kernels DIRS kernels LINKS segmux_ir DNNL::dnnl)
set(SEGMUX_KERNELS_DIR ${CMAKE_CURRENT_SOURCE_DIR}/src/kernels/cpu)
file(GLOB segmux_avx512_srcs CONFIGURE_DEPENDS ${SEGMUX_KERNELS_DIR}/*_avx512.cpp)
file(GLOB segmux_avx2_srcs CONFIGURE_DEPENDS ${SEGMUX_KERNELS_DIR}/*_avx2.cpp)
# GCC 12 bug 105593: its own avx512fintrin.h trips -W(maybe-)uninitialized at -O3.
set_source_files_properties(${segmux_avx512_srcs} PROPERTIES COMPILE_OPTIONS
  "-mavx512f;-mavx512bw;-mavx512dq;-mavx512vl;-mavx2;-mfma;-mf16c;$<$<CXX_COMPILER_ID:GNU>:-Wno-uninitialized;-Wno-maybe-uninitialized>")
# *_bf16_avx512.cpp also use AVX512_BF16 (vdpbf16ps); the dispatcher runs them only where CPUID has it.
# A compile flag, not a GCC target pragma: clang (the fuzz build) ignores that pragma.
file(GLOB segmux_avx512_bf16_srcs CONFIGURE_DEPENDS ${SEGMUX_KERNELS_DIR}/*_bf16_avx512.cpp)
set_property(SOURCE ${segmux_avx512_bf16_srcs} APPEND PROPERTY COMPILE_OPTIONS -mavx512bf16)
# The portable loops (simd_portable.h) give the same bits at both levels: no FMA contraction. Without
# -fno-trapping-math GCC keeps the clamps and selects of exp/erf as branches and vectorises nothing
# there (60x slower Softmax); the loops use no floating-point exception flags.
set(segmux_portable_flags -ffp-contract=off -fno-trapping-math -fno-math-errno)
set_source_files_properties(${segmux_avx2_srcs} PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma;-mf16c;${segmux_portable_flags}")
set_source_files_properties(${SEGMUX_KERNELS_DIR}/simd_generic.cpp PROPERTIES COMPILE_OPTIONS "${segmux_portable_flags}")
# oneDNN on Debian runs on OpenMP (libgomp); our CPU kernels use the same runtime so the two never
# oversubscribe the cores with two thread pools.
find_package(OpenMP REQUIRED COMPONENTS CXX)
target_link_libraries(segmux_kernels PRIVATE OpenMP::OpenMP_CXX)
if(SEGMUX_TESTS AND NOT SEGMUX_SANITIZE)  # (ASan adds a module constructor to every object)
  add_test(NAME kernels_isa_objects COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/scripts/check_isa_objects.sh
           $<TARGET_FILE:segmux_kernels>)
  set_tests_properties(kernels_isa_objects PROPERTIES LABELS unit)
endif()
if(SEGMUX_TESTS)
  # oneDNN limited to AVX2 (no bf16 kernels there): bf16 matmul/conv must still give bf16 numbers.
  add_test(NAME kernels_cpu_onednn_avx2 COMMAND test_kernels_cpu
           --gtest_filter=CpuMatMul.*:CpuGemm.*:CpuLinear.*:CpuConv*)
  set_tests_properties(kernels_cpu_onednn_avx2 PROPERTIES ENVIRONMENT ONEDNN_MAX_CPU_ISA=AVX2 LABELS unit)
endif()
