# The web page of `segmux serve` (src/service/web/*) compiled into segmux_service as byte arrays, so the
# binary serves it with no files to install and no build step at run time. Regenerated when a file
# changes (the generator lists them as dependencies).
file(GLOB SEGMUX_WEB_FILES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/service/web/*)
string(REPLACE ";" "|" SEGMUX_WEB_FILE_ARG "${SEGMUX_WEB_FILES}")
set(SEGMUX_WEB_CPP ${CMAKE_CURRENT_BINARY_DIR}/generated/web_assets.cpp)
add_custom_command(
  OUTPUT ${SEGMUX_WEB_CPP}
  COMMAND ${CMAKE_COMMAND} -DOUT=${SEGMUX_WEB_CPP} "-DFILES=${SEGMUX_WEB_FILE_ARG}"
          -P ${CMAKE_CURRENT_SOURCE_DIR}/cmake/embed_web_gen.cmake
  DEPENDS ${SEGMUX_WEB_FILES} ${CMAKE_CURRENT_SOURCE_DIR}/cmake/embed_web_gen.cmake
  COMMENT "Embedding the segmux serve web page"
  VERBATIM)
target_sources(segmux_service PRIVATE ${SEGMUX_WEB_CPP})
