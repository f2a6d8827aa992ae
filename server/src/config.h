// myops-server's command line: every flag has an environment-variable equivalent
// (MYOPS_<FLAG>, e.g. MYOPS_ADDRESS); flags win over the environment.
#pragma once

#include <chrono>
#include <string>

#include "absl/status/statusor.h"
#include "server.h"

namespace myops::server {

struct Config {
  ServerOptions server;
  std::chrono::milliseconds drain_delay{1000};
  std::chrono::milliseconds grace_period{30000};
  std::string log_level = "info";  // error | warn | info | debug
};

// The outcome of parsing argv: a config to run with, or (--help, --version, a bad flag)
// a message to print and an exit code.
struct ParseResult {
  Config config;
  int exit_code = -1;  // >= 0: exit now with this code after printing `message`
  std::string message;
};
ParseResult ParseCommandLine(int argc, char** argv);

}  // namespace myops::server
