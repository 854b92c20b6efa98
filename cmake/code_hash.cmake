# The hash of the code that decides the bytes of a compiled model (the .smx compiler, the model graphs,
# the kernels and their prepacking, the offline format, the ONNX export, packages and the model store),
# generated at build time into generated/segmux_code_hash.h for the model cache's key
# (deploy/model_store/cache.h). The CLI and libsegmux of one build get the same hash, every rebuild of
# the same code gets it again, and any change to these sources (or to the compiler and its flags) gives
# a new one: cache entries are shared across front doors and rebuilds but never reused across code.
set(SEGMUX_CODE_HASH_DIRS core io ir kernels runtime onnx compiler models engines deploy/package
    deploy/model_store)
set(SEGMUX_CODE_HASH_GLOBS)
foreach(dir ${SEGMUX_CODE_HASH_DIRS})
  list(APPEND SEGMUX_CODE_HASH_GLOBS ${CMAKE_CURRENT_SOURCE_DIR}/src/${dir}/*.cpp ${CMAKE_CURRENT_SOURCE_DIR}/src/${dir}/*.h)
endforeach()
file(GLOB_RECURSE SEGMUX_CODE_HASH_FILES CONFIGURE_DEPENDS ${SEGMUX_CODE_HASH_GLOBS})
list(APPEND SEGMUX_CODE_HASH_FILES ${CMAKE_CURRENT_SOURCE_DIR}/cmake/kernels.cmake)
list(SORT SEGMUX_CODE_HASH_FILES)
set(SEGMUX_CODE_HASH_LIST ${CMAKE_CURRENT_BINARY_DIR}/generated/segmux_code_hash.files)
string(REPLACE ";" "\n" _segmux_code_hash_lines "${SEGMUX_CODE_HASH_FILES}")
# The compiler and its flags decide the bytes too (constant folding in the .smx compiler).
string(TOUPPER "${CMAKE_BUILD_TYPE}" _segmux_bt)
set(_segmux_toolchain "${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION} ${CMAKE_CXX_FLAGS} ${CMAKE_CXX_FLAGS_${_segmux_bt}} sanitize=${SEGMUX_SANITIZE}")
file(CONFIGURE OUTPUT ${SEGMUX_CODE_HASH_LIST} CONTENT "${_segmux_toolchain}\n${_segmux_code_hash_lines}\n")
set(SEGMUX_CODE_HASH_HEADER ${CMAKE_CURRENT_BINARY_DIR}/generated/segmux_code_hash.h)
add_custom_command(
  OUTPUT ${SEGMUX_CODE_HASH_HEADER}
  COMMAND ${CMAKE_COMMAND} -DLIST=${SEGMUX_CODE_HASH_LIST} -DROOT=${CMAKE_CURRENT_SOURCE_DIR}
          -DOUT=${SEGMUX_CODE_HASH_HEADER} -P ${CMAKE_CURRENT_SOURCE_DIR}/cmake/code_hash_gen.cmake
  DEPENDS ${SEGMUX_CODE_HASH_FILES} ${SEGMUX_CODE_HASH_LIST} ${CMAKE_CURRENT_SOURCE_DIR}/cmake/code_hash_gen.cmake
  COMMENT "Hashing the code that makes compiled models"
  VERBATIM)
target_sources(segmux_model_store PRIVATE ${SEGMUX_CODE_HASH_HEADER})
set_source_files_properties(${CMAKE_CURRENT_SOURCE_DIR}/src/deploy/model_store/cache.cpp PROPERTIES
  INCLUDE_DIRECTORIES ${CMAKE_CURRENT_BINARY_DIR}/generated)
