// Subcommand registry of the segmux binary. Each command lives in its own cmd_*.cpp file.
#pragma once
#include <functional>
#include <string>
#include <vector>

namespace segmux::apps {

struct Command {
  std::string name;
  std::string summary;
  std::function<int(int argc, char** argv)> main;  // argv[0] is the command name
};

// Every command file registers itself by a static CommandRegistration object.
std::vector<Command>& commands();
struct CommandRegistration {
  CommandRegistration(std::string name, std::string summary, std::function<int(int, char**)> fn);
};

int dispatch(int argc, char** argv);

}  // namespace segmux::apps
