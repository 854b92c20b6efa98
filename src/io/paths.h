// Checks and folders by path, with errors that name the path and say why (never a library's raw
// "filesystem error: ..." text).
//
//   require_regular_file(path, "input");   // "input 'v.mp4' is a named pipe (FIFO), not a regular file"
//   make_directories(out_dir);            // "cannot create the folder '/dev/null/x': Not a directory"
#pragma once
#include <string>

namespace segmux {

// Refuses anything but a regular file (symlinks followed) before a library opens it by name: a FIFO
// blocks its opener until a writer comes (for ever), a device can be read without end. The message
// names `what` and the path and says what it is instead.
void require_regular_file(const std::string& path, const std::string& what);

// Creates a folder and its parents (existing ones are fine).
void make_directories(const std::string& path);

}  // namespace segmux
