// TLS and mutual TLS: a self-signed certificate made with the openssl CLI serves as the
// server's certificate, the clients' trust root and (for mTLS) the client certificate.
// (No std::filesystem here: libtorch.so exports a broken copy of its symbols.)
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <openssl/ssl.h>

#include "http/tls.h"
#include "test_server.h"

namespace myops::server {
namespace {

class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/myops_tls_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    const std::string cmd =
        "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost"
        " -addext subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout " +
        Path("key.pem") + " -out " + Path("cert.pem") + " 2>/dev/null";
    if (std::system(cmd.c_str()) != 0) GTEST_SKIP() << "openssl CLI not available";
    cert_ = Read(Path("cert.pem"));
    key_ = Read(Path("key.pem"));
  }
  void TearDown() override {
    for (const char* f : {"cert.pem", "key.pem", "other_cert.pem", "other_key.pem"}) {
      unlink(Path(f).c_str());
    }
    rmdir(dir_.c_str());
  }

  std::string Path(const char* name) const { return dir_ + "/" + name; }

  static std::string Read(const std::string& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  grpc::Status Call(const std::string& address, std::shared_ptr<grpc::ChannelCredentials> creds) {
    grpc::ChannelArguments args;
    args.SetSslTargetNameOverride("localhost");
    auto stub = myops::v1::Myops::NewStub(grpc::CreateCustomChannel(address, creds, args));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    myops::v1::ScaleShiftResponse response;
    auto request = testing::MakeRequest(DType::kFloat32, {4, 4}, 2.0, 1.0);
    grpc::Status status = stub->ScaleShift(&ctx, request, &response);
    if (status.ok()) EXPECT_EQ(response.output().data().size(), 64u);
    return status;
  }

  ServerOptions TlsOptions(bool mutual) {
    ServerOptions o = testing::LoopbackOptions();
    o.tls.cert_file = Path("cert.pem");
    o.tls.key_file = Path("key.pem");
    if (mutual) o.tls.client_ca_file = o.tls.cert_file;
    return o;
  }

  std::string dir_;
  std::string cert_, key_;
};

TEST_F(TlsTest, ServesOverTlsAndRefusesPlaintext) {
  auto t = testing::StartServer(TlsOptions(false));
  ASSERT_TRUE(t.server);
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = cert_;
  EXPECT_TRUE(Call(t.address, grpc::SslCredentials(ssl)).ok());
  EXPECT_EQ(Call(t.address, grpc::InsecureChannelCredentials()).error_code(),
            grpc::StatusCode::UNAVAILABLE);
}

TEST_F(TlsTest, MutualTlsRequiresAClientCertificate) {
  auto t = testing::StartServer(TlsOptions(true));
  ASSERT_TRUE(t.server);
  grpc::SslCredentialsOptions anonymous;
  anonymous.pem_root_certs = cert_;
  EXPECT_EQ(Call(t.address, grpc::SslCredentials(anonymous)).error_code(),
            grpc::StatusCode::UNAVAILABLE);  // The handshake fails.
  grpc::SslCredentialsOptions with_cert = anonymous;
  with_cert.pem_private_key = key_;
  with_cert.pem_cert_chain = cert_;
  EXPECT_TRUE(Call(t.address, grpc::SslCredentials(with_cert)).ok());
}

// A certificate signed by a CA other than --tls-client-ca is no credential: the
// handshake fails, while the right certificate on a fresh channel still works.
TEST_F(TlsTest, MutualTlsRejectsACertificateFromAnotherCa) {
  const std::string cmd =
      "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost"
      " -addext subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout " +
      Path("other_key.pem") + " -out " + Path("other_cert.pem") + " 2>/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  auto t = testing::StartServer(TlsOptions(true));
  ASSERT_TRUE(t.server);
  grpc::SslCredentialsOptions other;
  other.pem_root_certs = cert_;  // The client trusts the server...
  other.pem_private_key = Read(Path("other_key.pem"));
  other.pem_cert_chain = Read(Path("other_cert.pem"));  // ...which does not trust this.
  EXPECT_EQ(Call(t.address, grpc::SslCredentials(other)).error_code(),
            grpc::StatusCode::UNAVAILABLE);
  grpc::SslCredentialsOptions trusted = other;
  trusted.pem_private_key = key_;
  trusted.pem_cert_chain = cert_;
  EXPECT_TRUE(Call(t.address, grpc::SslCredentials(trusted)).ok());
}

// --tls-client-ca without a server certificate cannot take effect: startup fails rather
// than serving plaintext to clients that were meant to be authenticated.
TEST_F(TlsTest, ClientCaWithoutServerCertificateFailsAtStartup) {
  ServerOptions o = testing::LoopbackOptions();
  o.tls.client_ca_file = Path("cert.pem");
  auto server = Server::Start(o);
  ASSERT_FALSE(server.ok()) << (*server)->Describe();
  EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(server.status().message()).find("--tls-client-ca needs --tls-cert"),
            std::string::npos)
      << server.status();
}

// Probes that cannot speak TLS (Kubernetes' gRPC probes, the image's HEALTHCHECK) use a
// plaintext health-only port, which follows the main server's status and serves nothing else.
TEST_F(TlsTest, PlaintextHealthPortServesOnlyHealth) {
  ServerOptions o = TlsOptions(false);
  o.health_address = "127.0.0.1:0";
  auto t = testing::StartServer(o);
  ASSERT_TRUE(t.server);
  ASSERT_GT(t.server->health_port(), 0);
  const std::string health = "127.0.0.1:" + std::to_string(t.server->health_port());
  auto plaintext = testing::Connect(health);
  EXPECT_EQ(testing::HealthStatus(plaintext, ""), 1);  // SERVING
  EXPECT_EQ(testing::HealthStatus(plaintext, "myops.v1.Myops"), 1);
  EXPECT_EQ(Call(health, grpc::InsecureChannelCredentials()).error_code(),
            grpc::StatusCode::UNIMPLEMENTED);  // No ScaleShift without TLS.
  EXPECT_EQ(Call(t.address, grpc::InsecureChannelCredentials()).error_code(),
            grpc::StatusCode::UNAVAILABLE);  // The main port stays TLS-only.
  t.server->BeginDrain();
  EXPECT_EQ(testing::HealthStatus(plaintext, "myops.v1.Myops"), 2);  // NOT_SERVING
}

TEST_F(TlsTest, MissingFilesFailAtStartup) {
  ServerOptions o = TlsOptions(false);
  o.tls.key_file = Path("absent.pem");
  auto server = Server::Start(o);
  ASSERT_FALSE(server.ok());
  EXPECT_NE(std::string(server.status().message()).find("cannot read --tls-key file"),
            std::string::npos);
}

// The REST port's TLS set-up (http_tls.h) takes the same files, and says which one did not
// load (the server's start-up error then names it).
TEST_F(TlsTest, HttpTlsLoadsTheFilesOrNamesTheOneThatFails) {
  const std::string cmd =
      "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=other -keyout " +
      Path("other_key.pem") + " -out " + Path("other_cert.pem") + " 2>/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  auto configure = [](const HttpTlsFiles& files, std::string* error) {
    SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
    const bool ok = ConfigureHttpTls(ctx, files, error);
    SSL_CTX_free(ctx);
    return ok;
  };
  std::string error;
  EXPECT_TRUE(configure({Path("cert.pem"), Path("key.pem"), ""}, &error)) << error;
  EXPECT_TRUE(configure({Path("cert.pem"), Path("key.pem"), Path("other_cert.pem")}, &error))
      << error;
  EXPECT_FALSE(configure({Path("cert.pem"), Path("other_key.pem"), ""}, &error));
  EXPECT_NE(error.find("--tls-key"), std::string::npos) << error;
  EXPECT_FALSE(configure({Path("missing.pem"), Path("key.pem"), ""}, &error));
  EXPECT_NE(error.find("--tls-cert"), std::string::npos) << error;
  EXPECT_FALSE(configure({Path("cert.pem"), Path("key.pem"), Path("missing.pem")}, &error));
  EXPECT_NE(error.find("--tls-client-ca"), std::string::npos) << error;
}

}  // namespace
}  // namespace myops::server
