# libsegmux.so and the installed package (docs/library.md): the C API (src/capi, static segmux_capi)
# with every layer below it linked in, exporting only the segmux_* C functions (a version script: the
# static libraries' C++ symbols stay local, so they never clash with an application's own copies of
# oneDNN helpers, nlohmann::json, ...). Installed beside it: the public headers (include/segmux/), the
# CMake package (find_package(segmux) -> segmux::segmux), segmux.pc, and the segmux command.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

add_library(segmux_shared SHARED ${CMAKE_CURRENT_SOURCE_DIR}/cmake/empty_layer.cpp)
add_library(segmux::segmux ALIAS segmux_shared)
# 0.x releases promise no ABI stability between minor versions, so the SONAME carries major.minor.
set_target_properties(segmux_shared PROPERTIES
  OUTPUT_NAME segmux
  EXPORT_NAME segmux
  VERSION ${PROJECT_VERSION}
  SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR}
  LINK_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/cmake/libsegmux.map)
target_link_libraries(segmux_shared PRIVATE "$<LINK_LIBRARY:WHOLE_ARCHIVE,segmux_capi>")
target_link_options(segmux_shared PRIVATE
  -Wl,--version-script=${CMAKE_CURRENT_SOURCE_DIR}/cmake/libsegmux.map -Wl,--no-undefined)
target_include_directories(segmux_shared INTERFACE
  $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>
  $<BUILD_INTERFACE:${CMAKE_CURRENT_BINARY_DIR}/include>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)

set(SEGMUX_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/segmux)
install(TARGETS segmux_shared EXPORT segmuxTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT library NAMELINK_COMPONENT library)
install(FILES include/segmux/segmux.h include/segmux/segmux.hpp
              ${CMAKE_CURRENT_BINARY_DIR}/include/segmux/version.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/segmux COMPONENT library)
install(EXPORT segmuxTargets NAMESPACE segmux:: DESTINATION ${SEGMUX_CMAKE_DIR} COMPONENT library)
configure_package_config_file(cmake/segmuxConfig.cmake.in ${CMAKE_CURRENT_BINARY_DIR}/segmuxConfig.cmake
  INSTALL_DESTINATION ${SEGMUX_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/segmuxConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/segmuxConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/segmuxConfigVersion.cmake
        DESTINATION ${SEGMUX_CMAKE_DIR} COMPONENT library)
# Relocatable: the prefix is found from the .pc file's own folder (cmake --install --prefix anywhere).
file(RELATIVE_PATH SEGMUX_PC_TO_PREFIX /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
string(REGEX REPLACE "/$" "" SEGMUX_PC_TO_PREFIX "${SEGMUX_PC_TO_PREFIX}")
configure_file(cmake/segmux.pc.in ${CMAKE_CURRENT_BINARY_DIR}/segmux.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/segmux.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT library)
install(TARGETS segmux RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT tools)
install(FILES LICENSE THIRD_PARTY_NOTICES.md DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT library)

if(SEGMUX_TESTS)
  enable_testing()
  # Only the C API leaves the library.
  add_test(NAME library_exports COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/scripts/check_exports.sh
           $<TARGET_FILE:segmux_shared>)
  set_tests_properties(library_exports PROPERTIES LABELS unit)
endif()
