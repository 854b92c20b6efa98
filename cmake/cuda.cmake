# The CUDA backend (docs/cuda.md), included by CMakeLists.txt after the kernels layer.
#   SEGMUX_CUDA=AUTO (default): on when CMake finds the CUDA toolkit (nvcc, cudart, cuBLASLt) and cuDNN's
#                               header and library; off otherwise, with one status line saying why.
#   SEGMUX_CUDA=ON:  the same, but configure fails with that reason when something is missing.
#   SEGMUX_CUDA=OFF: never; src/kernels/cuda/cuda_absent.cpp answers "built without the CUDA backend".
# The .cu files form segmux_kernels_cuda (raw pointers only, no segmux header but cuda_api.h and
# launch_shape.h); the host side of the provider (src/kernels/cuda/*.cpp) is part of segmux_kernels and
# is always compiled. One GPU architecture keeps CI's compile short: SEGMUX_CUDA_ARCHITECTURES (90a = H100/H200).
set(SEGMUX_CUDA AUTO CACHE STRING "CUDA backend: AUTO, ON or OFF")
set_property(CACHE SEGMUX_CUDA PROPERTY STRINGS AUTO ON OFF)
set(SEGMUX_CUDA_ARCHITECTURES 90a CACHE STRING "GPU architectures the CUDA kernels are compiled for (CMAKE_CUDA_ARCHITECTURES syntax)")
set(SEGMUX_CUDA_ENABLED OFF)

function(segmux_cuda_missing why)
  if(SEGMUX_CUDA STREQUAL "ON")
    message(FATAL_ERROR "SEGMUX_CUDA=ON but ${why}")
  endif()
  message(STATUS "CUDA backend: off (${why})")
endfunction()

if(SEGMUX_CUDA STREQUAL "OFF")
  message(STATUS "CUDA backend: off (SEGMUX_CUDA=OFF)")
elseif(NOT SEGMUX_CUDA MATCHES "^(AUTO|ON)$")
  message(FATAL_ERROR "SEGMUX_CUDA must be AUTO, ON or OFF, not '${SEGMUX_CUDA}'")
else()
  find_package(CUDAToolkit QUIET)
  if(NOT CUDAToolkit_FOUND OR NOT CUDAToolkit_NVCC_EXECUTABLE OR NOT EXISTS "${CUDAToolkit_NVCC_EXECUTABLE}")
    segmux_cuda_missing("no CUDA toolkit with nvcc was found (find_package(CUDAToolkit))")
  elseif(NOT TARGET CUDA::cublasLt OR NOT TARGET CUDA::cudart_static)
    segmux_cuda_missing("the CUDA toolkit has no cuBLASLt or static cudart")
  else()
    find_path(SEGMUX_CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS} ${CUDAToolkit_LIBRARY_ROOT}/include)
    find_library(SEGMUX_CUDNN_LIBRARY cudnn HINTS ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT}/lib
                 ${CUDAToolkit_LIBRARY_ROOT}/lib64)
    if(NOT SEGMUX_CUDNN_INCLUDE_DIR OR NOT SEGMUX_CUDNN_LIBRARY)
      segmux_cuda_missing("cuDNN (cudnn.h and libcudnn) was not found next to the CUDA toolkit")
    else()
      set(SEGMUX_CUDA_ENABLED ON)
    endif()
  endif()
endif()

if(SEGMUX_CUDA_ENABLED)
  set(CMAKE_CUDA_COMPILER ${CUDAToolkit_NVCC_EXECUTABLE})
  set(CMAKE_CUDA_ARCHITECTURES ${SEGMUX_CUDA_ARCHITECTURES})
  if(CCACHE_PROGRAM)
    set(CMAKE_CUDA_COMPILER_LAUNCHER ${CCACHE_PROGRAM})
  endif()
  enable_language(CUDA)
  message(STATUS "CUDA backend: on (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, sm ${SEGMUX_CUDA_ARCHITECTURES}, cuDNN ${SEGMUX_CUDNN_LIBRARY})")
  file(GLOB segmux_cuda_srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/kernels/cuda/*.cu)
  add_library(segmux_kernels_cuda STATIC ${segmux_cuda_srcs})
  set_target_properties(segmux_kernels_cuda PROPERTIES CUDA_STANDARD 17 CUDA_STANDARD_REQUIRED ON
                        CUDA_ARCHITECTURES "${SEGMUX_CUDA_ARCHITECTURES}" POSITION_INDEPENDENT_CODE ON)
  target_include_directories(segmux_kernels_cuda PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src ${SEGMUX_CUDNN_INCLUDE_DIR})
  # The directory's options (SEGMUX_SANITIZE's -fsanitize=...) are host-compiler flags nvcc rejects; device
  # code cannot be sanitised anyway (compute-sanitizer does that on the GPU machine).
  set_property(TARGET segmux_kernels_cuda PROPERTY COMPILE_OPTIONS "")
  # Warnings of our device code are errors like the host's (-Werror all-warnings); the host compiler's
  # warnings on the .cu host code too.
  target_compile_options(segmux_kernels_cuda PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra
                         $<$<BOOL:${SEGMUX_WERROR}>:-Werror=all-warnings>>)
  # cudart is linked statically (the device image may lack the toolkit's libcudart.so); cuBLASLt comes
  # from the machine at run time (the device image's nvidia-* wheels, LD_LIBRARY_PATH). cuDNN is found
  # (its header is compiled against) but not linked until the cuDNN convolution lands (docs/cuda.md):
  # libsegmux.so should not load ~1 GB of cuDNN engines for nothing.
  target_link_libraries(segmux_kernels_cuda PUBLIC CUDA::cudart_static CUDA::cublasLt)
  # Only the stub file asks (a definition on every kernels file would change all their compile lines).
  set_property(SOURCE ${CMAKE_CURRENT_SOURCE_DIR}/src/kernels/cuda/cuda_absent.cpp APPEND PROPERTY
               COMPILE_DEFINITIONS SEGMUX_HAVE_CUDA=1)
  target_link_libraries(segmux_kernels PUBLIC segmux_kernels_cuda)
endif()

if(SEGMUX_CUDA_ENABLED)
  # What travels to the GPU machine (scripts/device_pack.sh): the device tool over the runtime alone and
  # the GPU kernel tests over the kernels alone (no media, ONNX, ICU or HTTP; libstdc++ linked in, since
  # the device image's may be older or newer than this machine's).
  # It builds the full-size candidates itself (models + compiler, the random checkpoint writer compiled
  # in rather than the whole verify layer); --as-needed drops the shared libraries nothing calls.
  add_executable(segmux-device ${CMAKE_CURRENT_SOURCE_DIR}/src/apps/device/segmux_device.cpp
                               ${CMAKE_CURRENT_SOURCE_DIR}/src/verify/sam31/random_checkpoint.cpp)
  target_compile_options(segmux-device PRIVATE ${SEGMUX_WARNINGS})
  target_link_libraries(segmux-device PRIVATE segmux_models segmux_compiler)
  target_link_options(segmux-device PRIVATE -static-libstdc++ -static-libgcc -Wl,--as-needed)
  if(SEGMUX_TESTS)
    file(GLOB segmux_kernels_cuda_tests CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/tests/kernels_cuda/*.cpp)
    add_executable(test_kernels_cuda_device ${segmux_kernels_cuda_tests})
    target_compile_options(test_kernels_cuda_device PRIVATE ${SEGMUX_WARNINGS})
    target_include_directories(test_kernels_cuda_device PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/tests)
    target_link_libraries(test_kernels_cuda_device PRIVATE segmux_kernels GTest::gtest)
    target_link_options(test_kernels_cuda_device PRIVATE -static-libstdc++ -static-libgcc)
  endif()
endif()
