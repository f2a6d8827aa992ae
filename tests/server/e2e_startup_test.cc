// The real myops-server binary's command line and start-up: --help, bad flags, MYOPS_*
// environment variables (how every manifest in deploy/ configures it) and flags winning
// over them, and start-up failures (port in use, metrics or health address in use, TLS
// files missing or not PEM, an absent GPU): each exits 1 with a message naming the problem.
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "server_process.h"
#include "test_server.h"

namespace myops::server {
namespace {

using testing::RunServer;
using testing::ServerProcess;

// A loopback port held by a plain listening socket (no SO_REUSEPORT) for the test's life.
class BusyPort {
 public:
  BusyPort() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (bind(fd_, reinterpret_cast<sockaddr*>(&a), len) == 0 && listen(fd_, 4) == 0 &&
        getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
      port_ = ntohs(a.sin_port);
    }
  }
  ~BusyPort() { close(fd_); }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

TEST(StartupTest, HelpListsEveryFlagWithItsEnvironmentVariable) {
  std::string out;
  ASSERT_EQ(RunServer({"--help"}, &out), 0) << out;
  for (const char* flag : {"address",           "devices",
                           "cpu-workers",       "cuda-workers",
                           "intra-op-threads",  "inline-max-bytes",
                           "max-message-bytes", "max-elements",
                           "max-inflight",      "max-inflight-bytes",
                           "max-streams",       "max-concurrent-streams",
                           "stall-timeout-ms",  "drain-delay",
                           "grace-period",      "log-level",
                           "tls-cert",          "tls-key",
                           "tls-client-ca",     "auth-token-file",
                           "reflection",        "health-address",
                           "metrics-address",   "http2-window-bytes",
                           "grpc-threads"}) {
    std::string env = std::string("MYOPS_") + flag;
    for (char& c : env) c = c == '-' ? '_' : static_cast<char>(std::toupper(c));
    EXPECT_NE(out.find(std::string("--") + flag + " "), std::string::npos) << flag << "\n" << out;
    EXPECT_NE(out.find("(Env:" + env + ")"), std::string::npos) << env << "\n" << out;
  }
  ASSERT_EQ(RunServer({"--version"}, &out), 0) << out;
  EXPECT_NE(out.find('.'), std::string::npos) << out;
}

TEST(StartupTest, BadFlagsAndValuesAreNamed) {
  std::string out;
  // CLI11's exit codes: 105 a value failing its check, 109 an unknown argument.
  EXPECT_EQ(RunServer({"--max-inflight", "-3"}, &out), 105) << out;
  EXPECT_NE(out.find("--max-inflight: Value -3"), std::string::npos) << out;
  EXPECT_EQ(RunServer({"--stall-timeout-ms", "0"}, &out), 105) << out;
  EXPECT_NE(out.find("--stall-timeout-ms: Value 0 not in range 1 to 86400000"), std::string::npos)
      << out;
  EXPECT_EQ(RunServer({"--http2-window-bytes", "65534"}, &out), 105) << out;
  EXPECT_NE(out.find("--http2-window-bytes: Value 65534 not in range 65535 to 1073741824"),
            std::string::npos)
      << out;
  EXPECT_EQ(RunServer({"--grpc-threads", "65"}, &out), 105) << out;
  EXPECT_NE(out.find("--grpc-threads: Value 65 not in range 0 to 64"), std::string::npos) << out;
  EXPECT_EQ(RunServer({"--no-such-flag"}, &out), 109) << out;
  EXPECT_NE(out.find("--no-such-flag"), std::string::npos) << out;
  EXPECT_EQ(RunServer({"--log-level", "loud"}, &out), 105) << out;
  EXPECT_NE(out.find("--log-level"), std::string::npos) << out;
  // A bad value from the environment fails the same way.
  EXPECT_EQ(RunServer({}, &out, {"MYOPS_MAX_INFLIGHT=0"}), 105) << out;
  EXPECT_NE(out.find("--max-inflight: Value 0"), std::string::npos) << out;
}

// deploy/ configures the server only through MYOPS_* variables: each takes effect, and a
// flag given as well wins over its variable.
TEST(StartupTest, EnvironmentConfiguresTheServerAndFlagsWin) {
  const std::vector<std::string> env = {"MYOPS_ADDRESS=127.0.0.1:0",
                                        "MYOPS_DEVICES=cpu",
                                        "MYOPS_CPU_WORKERS=3",
                                        "MYOPS_MAX_INFLIGHT=8",
                                        "MYOPS_MAX_MESSAGE_BYTES=67108864",
                                        "MYOPS_MAX_ELEMENTS=1000000",
                                        "MYOPS_METRICS_ADDRESS=127.0.0.1:0",
                                        "MYOPS_HEALTH_ADDRESS=127.0.0.1:0",
                                        "MYOPS_DRAIN_DELAY=0.25",
                                        "MYOPS_GRACE_PERIOD=7",
                                        "MYOPS_LOG_LEVEL=info",
                                        "MYOPS_INTRA_OP_THREADS=1",
                                        "MYOPS_GRPC_THREADS=3"};
  {
    ServerProcess server({}, env);
    const int port = server.WaitForPort();
    ASSERT_GT(port, 0) << server.output();
    const std::string& line = server.startup_line();
    for (const char* part : {"devices: cpu", "workers: 3", "grpc threads: 3 ",
                             "max_message_bytes=67108864", "max_elements=1000000", "max_inflight=8",
                             "metrics on 127.0.0.1:", "plaintext health on 127.0.0.1:"}) {
      EXPECT_NE(line.find(part), std::string::npos) << part << " in " << line;
    }
    auto stub = myops::v1::Myops::NewStub(testing::Connect("127.0.0.1:" + std::to_string(port)));
    grpc::ClientContext ctx;
    myops::v1::ServerInfoResponse info;
    ASSERT_TRUE(stub->ServerInfo(&ctx, {}, &info).ok());
    EXPECT_EQ(info.limits().max_inflight(), 8);
    EXPECT_EQ(info.limits().max_message_bytes(), 67108864);
    EXPECT_EQ(info.workers(), 3);
    server.Signal(SIGTERM);
    EXPECT_EQ(server.Wait(), 0) << server.output();
    EXPECT_NE(server.output().find("draining (250 ms, then up to 7000 ms"), std::string::npos)
        << server.output();
  }
  ServerProcess server({"--max-inflight", "5", "--cpu-workers", "1", "--grace-period", "2",
                        "--metrics-address", "", "--grpc-threads", "2"},
                       env);
  ASSERT_GT(server.WaitForPort(), 0) << server.output();
  const std::string& line = server.startup_line();
  EXPECT_NE(line.find("max_inflight=5"), std::string::npos) << line;
  EXPECT_NE(line.find("workers: 1 "), std::string::npos) << line;
  EXPECT_NE(line.find("grpc threads: 2 "), std::string::npos) << line;
  EXPECT_EQ(line.find("metrics on"), std::string::npos) << line;  // "" wins too: off
  EXPECT_NE(line.find("max_message_bytes=67108864"), std::string::npos) << line;  // From env.
  server.Signal(SIGTERM);
  EXPECT_EQ(server.Wait(), 0) << server.output();
  EXPECT_NE(server.output().find("draining (250 ms, then up to 2000 ms"), std::string::npos)
      << server.output();
}

class StartupFailureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/myops_startup_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    for (const auto& f : files_) unlink(f.c_str());
    rmdir(dir_.c_str());
  }
  std::string Write(const char* name, const std::string& text) {
    files_.push_back(dir_ + "/" + name);
    std::ofstream(files_.back()) << text;
    return files_.back();
  }
  // Runs the server with `flags` (plus a loopback address and --devices cpu unless they
  // are among them); expects exit status 1 and every fragment in its output.
  void ExpectFailure(std::vector<std::string> flags, std::vector<std::string> fragments) {
    for (const char* flag : {"--address", "--devices"}) {
      if (std::find(flags.begin(), flags.end(), flag) == flags.end()) {
        flags.insert(flags.begin(), {flag, flag[2] == 'a' ? "127.0.0.1:0" : "cpu"});
      }
    }
    ServerProcess server(flags);
    if (server.WaitForPort() > 0) {
      ADD_FAILURE() << "the server started: " << server.startup_line();
      server.Signal(SIGKILL);
    }
    EXPECT_EQ(server.Wait(), 1) << server.output();
    for (const auto& f : fragments) {
      EXPECT_NE(server.output().find(f), std::string::npos) << f << "\n" << server.output();
    }
  }
  std::string dir_;
  std::vector<std::string> files_;
};

TEST_F(StartupFailureTest, PortInUse) {
  BusyPort busy;
  ASSERT_GT(busy.port(), 0);
  ExpectFailure({"--address", busy.address()},
                {"myops-server: cannot listen on " + busy.address(), "Address already in use"});
}

// gRPC sets SO_REUSEPORT unless told otherwise: a second server on the same port would
// start and take a share of the first one's connections.
TEST_F(StartupFailureTest, PortOfAnotherMyopsServer) {
  ServerProcess first({"--address", "127.0.0.1:0", "--devices", "cpu", "--drain-delay", "0"});
  const int port = first.WaitForPort();
  ASSERT_GT(port, 0) << first.output();
  const std::string address = "127.0.0.1:" + std::to_string(port);
  ExpectFailure({"--address", address}, {"myops-server: cannot listen on " + address});
  EXPECT_TRUE(first.Running());
}

TEST_F(StartupFailureTest, MetricsHealthOrHttpAddressInUse) {
  BusyPort busy;
  ASSERT_GT(busy.port(), 0);
  ExpectFailure({"--metrics-address", busy.address()},
                {"cannot listen for metrics on " + busy.address(), "Address already in use"});
  ExpectFailure({"--health-address", busy.address()},
                {"cannot listen for health checks on " + busy.address()});
  ExpectFailure({"--http-address", busy.address()},
                {"cannot serve HTTP on " + busy.address(), "Address already in use"});
}

TEST_F(StartupFailureTest, TlsFilesMissingIncompleteOrNotPem) {
  const std::string garbage = Write("garbage.pem", "not a certificate\n");
  ExpectFailure({"--tls-cert", garbage}, {"TLS needs both --tls-cert and --tls-key"});
  ExpectFailure({"--tls-key", garbage}, {"TLS needs both --tls-cert and --tls-key"});
  ExpectFailure({"--tls-client-ca", garbage}, {"--tls-client-ca needs --tls-cert and --tls-key"});
  ExpectFailure({"--tls-cert", dir_ + "/absent.pem", "--tls-key", garbage},
                {"cannot read --tls-cert file \"" + dir_ + "/absent.pem\""});
  ExpectFailure({"--tls-cert", garbage, "--tls-key", garbage},
                {"--tls-cert file \"" + garbage + "\" is not a PEM certificate"});
  const std::string cert =
      Write("cert.pem", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n");
  ExpectFailure({"--tls-cert", cert, "--tls-key", garbage},
                {"--tls-key file \"" + garbage + "\" is not a PEM private key"});
  ExpectFailure({"--tls-cert", cert, "--tls-key", cert},
                {"--tls-key file \"" + cert + "\" is not a PEM private key"});
}

TEST_F(StartupFailureTest, AbsentGpu) { ExpectFailure({"--devices", "cuda:5"}, {"cuda:5"}); }

}  // namespace
}  // namespace myops::server
