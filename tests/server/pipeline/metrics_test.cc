// Tests of the metrics: the series and gauges, the HTTP endpoint against good, bad, silent
// and many clients over real loopback TCP, and the counts a real in-process server reports
// after real calls.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "http/metrics_endpoint.h"
#include "pipeline/metrics.h"
#include "test_server.h"
#include "util/heap.h"

namespace myops::server {
namespace {

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The samples of an exposition text, or of an HTTP response's body: "name{labels}" ->
// value. Lines that are not samples are skipped.
std::map<std::string, double> Samples(const std::string& text) {
  const size_t body = text.rfind("HTTP/", 0) == 0 ? text.find("\r\n\r\n") : std::string::npos;
  std::istringstream lines(body == std::string::npos ? text : text.substr(body + 4));
  std::map<std::string, double> samples;
  for (std::string line; std::getline(lines, line);) {
    const size_t space = line.rfind(' ');
    if (line.empty() || line[0] == '#' || space == std::string::npos) continue;
    const std::string value = line.substr(space + 1);
    char* end = nullptr;
    const double parsed = std::strtod(value.c_str(), &end);
    if (end == value.c_str() + value.size()) samples[line.substr(0, space)] = parsed;
  }
  return samples;
}

Timing TimingOf(int64_t total_ns) {
  Timing t;
  t.decode_ns = 10;
  t.queue_ns = 20;
  t.compute_ns = 30;
  t.encode_ns = 40;
  t.total_ns = total_ns;
  return t;
}

TEST(MetricsTest, CountsRequestsLatencyStagesAndBytes) {
  Metrics m;
  Metrics::Rpc* unary = m.AddRpc("ScaleShift");
  Metrics::Rpc* stream = m.AddRpc("ScaleShiftStream");
  m.Record(unary, absl::OkStatus(), TimingOf(300'000), 1024);  // 0.3 ms
  m.Record(unary, absl::OkStatus(), TimingOf(20'000'000), 4);  // 20 ms
  m.Record(unary, absl::InvalidArgumentError("bad"), TimingOf(5), 99);
  m.Record(stream, absl::UnavailableError("x"), {}, 0);
  const std::string text = m.Render();
  for (const char* type : {"# TYPE myops_requests_total counter\n",
                           "# TYPE myops_request_duration_seconds histogram\n",
                           "# TYPE myops_stage_seconds_total counter\n",
                           "# TYPE myops_tensor_bytes_total counter\n"}) {
    EXPECT_TRUE(Contains(text, type)) << "missing: " << type << "in:\n" << text;
  }
  const std::map<std::string, double> want = {
      {R"(myops_requests_total{code="OK",rpc="ScaleShift"})", 2},
      {R"(myops_requests_total{code="INVALID_ARGUMENT",rpc="ScaleShift"})", 1},
      {R"(myops_requests_total{code="OK",rpc="ScaleShiftStream"})", 0},
      {R"(myops_requests_total{code="UNAVAILABLE",rpc="ScaleShiftStream"})", 1},
      {R"(myops_request_duration_seconds_bucket{rpc="ScaleShift",le="0.00025"})", 0},
      {R"(myops_request_duration_seconds_bucket{rpc="ScaleShift",le="0.0005"})", 1},
      {R"(myops_request_duration_seconds_bucket{rpc="ScaleShift",le="0.01"})", 1},
      {R"(myops_request_duration_seconds_bucket{rpc="ScaleShift",le="0.025"})", 2},
      {R"(myops_request_duration_seconds_bucket{rpc="ScaleShift",le="+Inf"})", 2},
      {R"(myops_request_duration_seconds_sum{rpc="ScaleShift"})", 0.0203},
      {R"(myops_request_duration_seconds_count{rpc="ScaleShift"})", 2},
      {R"(myops_request_duration_seconds_count{rpc="ScaleShiftStream"})", 0},
      {R"(myops_stage_seconds_total{rpc="ScaleShift",stage="decode"})", 20e-9},
      {R"(myops_stage_seconds_total{rpc="ScaleShift",stage="compute"})", 60e-9},
      {R"(myops_stage_seconds_total{rpc="ScaleShiftStream",stage="encode"})", 0},
      {R"(myops_tensor_bytes_total{rpc="ScaleShift"})", 1028},
      {R"(myops_tensor_bytes_total{rpc="ScaleShiftStream"})", 0},
  };
  const std::map<std::string, double> samples = Samples(text);
  for (const auto& [series, value] : want) {
    auto it = samples.find(series);
    ASSERT_NE(it, samples.end()) << "missing: " << series << " in:\n" << text;
    EXPECT_NEAR(it->second, value, 1e-12 + value * 1e-12) << series;
  }
  EXPECT_FALSE(Contains(text, "code=\"NOT_FOUND\"")) << "codes never seen are left out";
  EXPECT_FALSE(Contains(text, "myops_inflight_requests")) << "the service adds that gauge";
}

TEST(MetricsTest, AnRpcIsExposedFromWhenItIsAddedAndNamedOnce) {
  Metrics m;
  EXPECT_FALSE(Contains(m.Render(), "rpc=\"ModelInfer\"")) << "no front end added it yet";
  Metrics::Rpc* infer = m.AddRpc("ModelInfer");
  EXPECT_EQ(m.AddRpc("ModelInfer"), infer) << "one series per name";
  EXPECT_NE(m.AddRpc("HttpModelInfer"), infer);
  std::map<std::string, double> samples = Samples(m.Render());
  EXPECT_EQ(samples.count(R"(myops_requests_total{code="OK",rpc="ModelInfer"})"), 1u);
  EXPECT_EQ(samples.count(R"(myops_request_duration_seconds_count{rpc="HttpModelInfer"})"), 1u);
  m.Record(infer, absl::OkStatus(), TimingOf(1000), 16);
  m.Record(m.AddRpc("ModelInfer"), absl::OkStatus(), TimingOf(1000), 16);
  samples = Samples(m.Render());
  EXPECT_EQ(samples[R"(myops_requests_total{code="OK",rpc="ModelInfer"})"], 2);
  EXPECT_EQ(samples[R"(myops_tensor_bytes_total{rpc="ModelInfer"})"], 32);
  EXPECT_EQ(samples[R"(myops_tensor_bytes_total{rpc="HttpModelInfer"})"], 0);
}

TEST(MetricsTest, GaugesAreReadAtEachScrape) {
  Metrics m;
  std::atomic<int64_t> held{5};
  ASSERT_TRUE(m.AddGauge("myops_test_held_bytes", "Bytes held.", [&held] {
                 return static_cast<double>(held.load());
               }).ok());
  EXPECT_TRUE(Contains(m.Render(), "# TYPE myops_test_held_bytes gauge\n"));
  EXPECT_EQ(Samples(m.Render())["myops_test_held_bytes"], 5);
  held = 7;
  EXPECT_EQ(Samples(m.Render())["myops_test_held_bytes"], 7);

  const auto one = [] { return 1.0; };
  EXPECT_EQ(m.AddGauge("myops_test_held_bytes", "again", one).code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(m.AddGauge("myops_requests_total", "taken", one).code(),
            absl::StatusCode::kAlreadyExists);
  const absl::Status bad = m.AddGauge("2bad name", "", one);
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(std::string(bad.message()), "2bad name")) << bad;
  EXPECT_EQ(m.AddGauge("myops_test_empty", "", nullptr).code(), absl::StatusCode::kInvalidArgument);
}

// A TCP connection to 127.0.0.1:port whose reads give up after `receive_timeout_s`; -1
// when it cannot connect.
int ConnectTo(int port, int receive_timeout_s = 5) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  const timeval timeout{receive_timeout_s, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// One HTTP exchange: sends `request`, then reads until the server closes the connection
// or a read waits `receive_timeout_s` (then what came so far is returned).
std::string Exchange(int port, const std::string& request, int receive_timeout_s = 5) {
  const int fd = ConnectTo(port, receive_timeout_s);
  if (fd < 0) return "connect failed";
  (void)!send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string response;
  char buffer[4096];
  for (ssize_t n; (n = recv(fd, buffer, sizeof(buffer), 0)) > 0;) {
    response.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  return response;
}

bool StartsWith(const std::string& text, const std::string& prefix) {
  return text.rfind(prefix, 0) == 0;
}

TEST(MetricsEndpointTest, ServesGetMetricsAndHttpErrors) {
  Metrics metrics;
  metrics.Record(metrics.AddRpc("ScaleShift"), absl::OkStatus(), TimingOf(1000), 8);
  auto endpoint = MetricsEndpoint::Start("127.0.0.1:0", metrics);
  ASSERT_TRUE(endpoint.ok()) << endpoint.status();
  const int port = (*endpoint)->port();
  ASSERT_GT(port, 0);

  const std::string ok = Exchange(port, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_TRUE(StartsWith(ok, "HTTP/1.1 200 OK\r\n")) << ok;
  EXPECT_TRUE(Contains(ok, "Content-Type: text/plain")) << ok;
  EXPECT_TRUE(Contains(ok, "\r\n\r\n# HELP ")) << ok;
  EXPECT_TRUE(Contains(ok, "\nmyops_tensor_bytes_total{rpc=\"ScaleShift\"} 8\n")) << ok;
  EXPECT_TRUE(Contains(ok, "\nexposer_scrapes_total ")) << ok;  // The exposer's own series.
  EXPECT_TRUE(StartsWith(Exchange(port, "GET /metrics?x=1 HTTP/1.0\r\n\r\n"), "HTTP/1.1 200 OK"));

  EXPECT_TRUE(StartsWith(Exchange(port, "GET / HTTP/1.1\r\n\r\n"), "HTTP/1.1 404 Not Found"));
  EXPECT_TRUE(StartsWith(Exchange(port, "GET /etc/passwd HTTP/1.1\r\n\r\n"), "HTTP/1.1 404"));
  const std::string post = Exchange(port, "POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
  EXPECT_TRUE(StartsWith(post, "HTTP/1.1 405 Method Not Allowed\r\n")) << post;
  EXPECT_TRUE(Contains(post, "Allow: GET\r\n")) << post;
  EXPECT_TRUE(StartsWith(Exchange(port, "DELETE /metrics HTTP/1.1\r\n\r\n"), "HTTP/1.1 405"));
  EXPECT_TRUE(StartsWith(Exchange(port, "garbage\r\n\r\n"), "HTTP/1.0 400 Bad Request"));
  const std::string huge = Exchange(port, "GET /metrics HTTP/1.1\r\nX: " + std::string(9000, 'a'));
  EXPECT_TRUE(StartsWith(huge, "HTTP/1.0 400 Bad Request")) << huge;  // Head over 8 KiB.

  // Still serving after all of that.
  EXPECT_TRUE(StartsWith(Exchange(port, "GET /metrics HTTP/1.1\r\n\r\n"), "HTTP/1.1 200 OK"));
}

// --metrics-auth: scrapes need HTTP Basic with a token (any tenant's) as the password.
TEST(MetricsEndpointTest, WithAPasswordScrapesNeedBasicAuth) {
  Metrics metrics;
  auto endpoint = MetricsEndpoint::Start("127.0.0.1:0", metrics, {"other-tenant", "s3cret"});
  ASSERT_TRUE(endpoint.ok()) << endpoint.status();
  const int port = (*endpoint)->port();
  const std::string none = Exchange(port, "GET /metrics HTTP/1.1\r\n\r\n");
  EXPECT_TRUE(StartsWith(none, "HTTP/1.1 401 Unauthorized\r\n")) << none;
  EXPECT_TRUE(Contains(none, "WWW-Authenticate: Basic realm=\"myops metrics\"")) << none;
  EXPECT_FALSE(Contains(none, "# HELP")) << none;
  // base64("prometheus:s3cret"), base64("prometheus:wrong"), base64("prometheus:s3cre").
  const std::string good = Exchange(
      port, "GET /metrics HTTP/1.1\r\nAuthorization: Basic cHJvbWV0aGV1czpzM2NyZXQ=\r\n\r\n");
  EXPECT_TRUE(StartsWith(good, "HTTP/1.1 200 OK\r\n")) << good;
  EXPECT_TRUE(Contains(good, "# HELP")) << good;
  for (const char* wrong : {"cHJvbWV0aGV1czp3cm9uZw==", "cHJvbWV0aGV1czpzM2NyZQ=="}) {
    const std::string refused = Exchange(
        port, std::string("GET /metrics HTTP/1.1\r\nAuthorization: Basic ") + wrong + "\r\n\r\n");
    EXPECT_TRUE(StartsWith(refused, "HTTP/1.1 401")) << refused;
  }
}

TEST(MetricsEndpointTest, StopsWithASilentClientConnected) {
  Metrics metrics;
  auto endpoint = MetricsEndpoint::Start("127.0.0.1:0", metrics);
  ASSERT_TRUE(endpoint.ok()) << endpoint.status();
  const int silent = ConnectTo((*endpoint)->port());
  ASSERT_GE(silent, 0);
  // Connections are accepted in order: once this later scrape is answered, the silent
  // one has been accepted and a thread is waiting for its request.
  EXPECT_TRUE(StartsWith(Exchange((*endpoint)->port(), "GET /metrics HTTP/1.1\r\n\r\n"),
                         "HTTP/1.1 200 OK"));
  endpoint->reset();  // Joins the threads, the one reading the silent client included.
  char byte;
  EXPECT_LE(recv(silent, &byte, 1, 0), 0);  // Closed (or reset) by the server, nothing sent.
  close(silent);
}

TEST(MetricsEndpointTest, BadAddressesAreErrors) {
  Metrics metrics;
  for (const char* address : {"no-port", "127.0.0.1:", "127.0.0.1:x", "127.0.0.1:70000",
                              "127.0.0.1:1,127.0.0.1:2", "127.0.0.1:1s"}) {
    auto endpoint = MetricsEndpoint::Start(address, metrics);
    EXPECT_EQ(endpoint.status().code(), absl::StatusCode::kInvalidArgument) << address;
    EXPECT_TRUE(Contains(std::string(endpoint.status().message()), address)) << address;
  }
  auto first = MetricsEndpoint::Start("127.0.0.1:0", metrics);
  ASSERT_TRUE(first.ok()) << first.status();
  const std::string taken_address = "127.0.0.1:" + std::to_string((*first)->port());
  auto taken = MetricsEndpoint::Start(taken_address, metrics);
  EXPECT_EQ(taken.status().code(), absl::StatusCode::kUnavailable) << taken.status();
  EXPECT_TRUE(Contains(std::string(taken.status().message()), taken_address)) << taken.status();
  EXPECT_TRUE(Contains(std::string(taken.status().message()), "in use")) << taken.status();
}

TEST(MetricsServerTest, ServerStartFailsWhenTheMetricsAddressIsInUse) {
  Metrics metrics;
  auto holder = MetricsEndpoint::Start("127.0.0.1:0", metrics);
  ASSERT_TRUE(holder.ok()) << holder.status();
  ServerOptions options = testing::LoopbackOptions();
  options.metrics_address = "127.0.0.1:" + std::to_string((*holder)->port());
  auto server = Server::Start(options);
  ASSERT_FALSE(server.ok());
  EXPECT_EQ(server.status().code(), absl::StatusCode::kUnavailable) << server.status();
  EXPECT_TRUE(Contains(std::string(server.status().message()), options.metrics_address))
      << server.status();
}

// Idle connections (opened, nothing sent, kept open) must not delay a scrape: each gets
// its own thread while threads are free. A server serving one connection at a time, with
// 2 s for each to send its request, would answer this scrape after 8 * 2 s, past the 5 s
// the scrape waits for its response here.
TEST(MetricsServerTest, ScrapesWhileIdleConnectionsStayOpen) {
  ServerOptions options = testing::LoopbackOptions();
  options.metrics_address = "127.0.0.1:0";
  testing::TestServer t = testing::StartServer(options);
  ASSERT_TRUE(t.server);
  std::vector<int> idle;
  for (int i = 0; i < 8; ++i) {
    idle.push_back(ConnectTo(t.server->metrics_port()));
    ASSERT_GE(idle.back(), 0);
  }
  const std::string text =
      Exchange(t.server->metrics_port(), "GET /metrics HTTP/1.1\r\n\r\n", /*receive_timeout_s=*/5);
  EXPECT_TRUE(StartsWith(text, "HTTP/1.1 200 OK")) << text;
  EXPECT_TRUE(Contains(text, "\nmyops_inflight_requests 0\n")) << text;
  for (int fd : idle) close(fd);
}

TEST(MetricsServerTest, ServerCountsItsRequests) {
  ServerOptions options = testing::LoopbackOptions();
  options.metrics_address = "127.0.0.1:0";
  testing::TestServer t = testing::StartServer(options);
  ASSERT_TRUE(t.server);
  ASSERT_GT(t.server->metrics_port(), 0);
  EXPECT_TRUE(Contains(t.server->Describe(), "metrics on 127.0.0.1:")) << t.server->Describe();

  myops::v1::ScaleShiftRequest good = testing::MakeRequest(DType::kFloat32, {256}, 2, 1);
  myops::v1::ScaleShiftRequest bad = good;
  bad.mutable_input()->mutable_data()->resize(3);
  for (const auto* request : {&good, &good, &bad}) {
    grpc::ClientContext ctx;
    myops::v1::ScaleShiftResponse response;
    (void)t.stub->ScaleShift(&ctx, *request, &response);
  }
  const std::string text = Exchange(t.server->metrics_port(), "GET /metrics HTTP/1.1\r\n\r\n");
  std::map<std::string, double> samples = Samples(text);
  EXPECT_EQ(samples[R"(myops_requests_total{code="OK",rpc="ScaleShift"})"], 2) << text;
  EXPECT_EQ(samples[R"(myops_requests_total{code="INVALID_ARGUMENT",rpc="ScaleShift"})"], 1);
  EXPECT_EQ(samples[R"(myops_request_duration_seconds_count{rpc="ScaleShift"})"], 2);
  EXPECT_EQ(samples[R"(myops_tensor_bytes_total{rpc="ScaleShift"})"], 2048);
  EXPECT_TRUE(Contains(text, "# TYPE myops_inflight_requests gauge\n")) << text;
  EXPECT_EQ(samples.count("myops_inflight_requests"), 1u) << text;
  EXPECT_EQ(samples["myops_inflight_requests"], 0);
  EXPECT_EQ(samples["myops_memory_budget_bytes"],
            static_cast<double>(t.server->pipeline().budget().limit()));
  EXPECT_EQ(samples.count("myops_memory_held_bytes"), 1u) << text;
  EXPECT_EQ(samples.count("myops_open_streams"), 1u) << text;
  if (HeapInUseBytes().has_value()) {  // Not under a sanitizer's allocator.
    EXPECT_GT(samples["myops_heap_in_use_bytes"], 0) << text;
  }
}

}  // namespace
}  // namespace myops::server
