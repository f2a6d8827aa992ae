// The C++ client over TLS against the in-process echo server: it connects when it trusts
// the server's certificate and verifies its name, and refuses a certificate it does not
// trust or one issued for another name. Certificates are made with the openssl CLI.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>

#include "echo_service.h"
#include "myops/client/client.h"

namespace myops::client {
namespace {

// A self-signed certificate for `name` (its only subject alternative name), PEM.
struct Identity {
  std::string cert, key;
};

class ClientTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/myops_client_tls_XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    server_identity_ = MakeIdentity("server", "localhost");
    stranger_ = MakeIdentity("stranger", "localhost");  // Same name, untrusted issuer.
    if (server_identity_.cert.empty() || stranger_.cert.empty()) {
      GTEST_SKIP() << "openssl CLI not available";
    }
    grpc::SslServerCredentialsOptions ssl;
    ssl.pem_key_cert_pairs.push_back({server_identity_.key, server_identity_.cert});
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::SslServerCredentials(ssl), &port_);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_TRUE(server_ != nullptr && port_ != 0);
  }

  void TearDown() override {
    if (server_) server_->Shutdown();
    std::system(("rm -rf " + dir_).c_str());
  }

  Identity MakeIdentity(const std::string& stem, const std::string& name) {
    const std::string cert = dir_ + "/" + stem + ".pem", key = dir_ + "/" + stem + ".key";
    const std::string command =
        "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=" + name +
        " -addext subjectAltName=DNS:" + name + " -keyout " + key + " -out " + cert +
        " 2>/dev/null";
    if (std::system(command.c_str()) != 0) return {};
    return {Read(cert), Read(key)};
  }

  static std::string Read(const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  // ScaleShift's status through a client that trusts `root_ca` and expects the server to
  // be `server_name` (the target is 127.0.0.1, which no certificate here names).
  absl::Status Call(const std::string& root_ca, const std::string& server_name) {
    ClientOptions options;
    options.target = "127.0.0.1:" + std::to_string(port_);
    options.tls.root_ca_pem = root_ca;
    if (!server_name.empty()) {
      options.string_channel_args["grpc.ssl_target_name_override"] = server_name;
    }
    options.retry.max_attempts = 1;
    options.default_deadline = std::chrono::seconds(20);
    absl::StatusOr<std::unique_ptr<Client>> client = Client::Create(options);
    if (!client.ok()) return client.status();
    const float x[2] = {1, 2};
    return (*client)->ScaleShift({DType::kFloat32, {2}, x, sizeof x}, 2.0, 1.0).status();
  }

  std::string dir_;
  Identity server_identity_, stranger_;
  myops::echo::EchoService service_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

TEST_F(ClientTlsTest, TrustedCertificateWithTheRightNameConnects) {
  absl::Status status = Call(server_identity_.cert, "localhost");
  EXPECT_TRUE(status.ok()) << status;
}

TEST_F(ClientTlsTest, UntrustedCertificateIsRefused) {
  EXPECT_EQ(Call(stranger_.cert, "localhost").code(), absl::StatusCode::kUnavailable);
}

TEST_F(ClientTlsTest, WrongServerNameIsRefused) {
  EXPECT_EQ(Call(server_identity_.cert, "other.example").code(), absl::StatusCode::kUnavailable);
  // Without an override the name checked is the target's host, 127.0.0.1: not in the
  // certificate either.
  EXPECT_EQ(Call(server_identity_.cert, "").code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace myops::client
