// Tests of the metrics: the Prometheus rendering, the HTTP endpoint against good and bad
// clients, and the counts a real in-process server reports after real calls.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include <gtest/gtest.h>

#include "metrics.h"
#include "metrics_http.h"
#include "test_server.h"

namespace myops::server {
namespace {

bool Contains(const std::string& text, const std::string& line) {
  return text.find(line) != std::string::npos;
}

myops::v1::Timing TimingOf(int64_t total_ns) {
  myops::v1::Timing t;
  t.set_decode_ns(10);
  t.set_queue_ns(20);
  t.set_compute_ns(30);
  t.set_encode_ns(40);
  t.set_total_ns(total_ns);
  return t;
}

TEST(MetricsTest, RendersCountsHistogramStagesBytesAndInflight) {
  Metrics m;
  m.Record(Metrics::Rpc::kScaleShift, absl::OkStatus(), TimingOf(300'000), 1024);  // 0.3 ms
  m.Record(Metrics::Rpc::kScaleShift, absl::OkStatus(), TimingOf(20'000'000), 4);  // 20 ms
  m.Record(Metrics::Rpc::kScaleShift, absl::InvalidArgumentError("bad"), TimingOf(5), 99);
  m.Record(Metrics::Rpc::kScaleShiftStream, absl::UnavailableError("x"), {}, 0);
  const std::string text = m.Render(3);
  for (const char* line : {
           "# TYPE myops_requests_total counter\n",
           "myops_requests_total{rpc=\"ScaleShift\",code=\"OK\"} 2\n",
           "myops_requests_total{rpc=\"ScaleShift\",code=\"INVALID_ARGUMENT\"} 1\n",
           "myops_requests_total{rpc=\"ScaleShiftStream\",code=\"OK\"} 0\n",
           "myops_requests_total{rpc=\"ScaleShiftStream\",code=\"UNAVAILABLE\"} 1\n",
           "# TYPE myops_request_duration_seconds histogram\n",
           "myops_request_duration_seconds_bucket{rpc=\"ScaleShift\",le=\"0.00025\"} 0\n",
           "myops_request_duration_seconds_bucket{rpc=\"ScaleShift\",le=\"0.0005\"} 1\n",
           "myops_request_duration_seconds_bucket{rpc=\"ScaleShift\",le=\"0.01\"} 1\n",
           "myops_request_duration_seconds_bucket{rpc=\"ScaleShift\",le=\"0.025\"} 2\n",
           "myops_request_duration_seconds_bucket{rpc=\"ScaleShift\",le=\"+Inf\"} 2\n",
           "myops_request_duration_seconds_sum{rpc=\"ScaleShift\"} 0.020300000\n",
           "myops_request_duration_seconds_count{rpc=\"ScaleShift\"} 2\n",
           "myops_request_duration_seconds_count{rpc=\"ScaleShiftStream\"} 0\n",
           "myops_stage_seconds_total{rpc=\"ScaleShift\",stage=\"compute\"} 0.000000060\n",
           "myops_tensor_bytes_total{rpc=\"ScaleShift\"} 1028\n",
           "myops_inflight_requests 3\n",
       }) {
    EXPECT_TRUE(Contains(text, line)) << "missing: " << line << "in:\n" << text;
  }
  EXPECT_FALSE(Contains(text, "code=\"NOT_FOUND\"")) << "codes never seen are left out";
}

// One HTTP exchange with 127.0.0.1:port: sends `request`, then reads until the server
// closes (or 5 s pass). `wait_before_send` lets a test hold the connection silent first.
std::string Exchange(int port, const std::string& request,
                     std::chrono::milliseconds wait_before_send = {}) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return "connect failed";
  }
  if (wait_before_send.count() > 0)
    usleep(static_cast<useconds_t>(wait_before_send.count() * 1000));
  (void)!send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string response;
  char buffer[4096];
  pollfd p{fd, POLLIN, 0};
  while (poll(&p, 1, 5000) > 0) {
    const ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
    if (n <= 0) break;
    response.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  return response;
}

TEST(MetricsHttpTest, ServesGetMetricsAndPreciseErrors) {
  auto http = MetricsHttpServer::Start("127.0.0.1:0", [] { return std::string("m 1\n"); });
  ASSERT_TRUE(http.ok()) << http.status();
  const int port = (*http)->port();
  ASSERT_GT(port, 0);

  std::string ok = Exchange(port, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(ok.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << ok;
  EXPECT_TRUE(Contains(ok, "Content-Type: text/plain; version=0.0.4")) << ok;
  EXPECT_TRUE(Contains(ok, "Content-Length: 4\r\n")) << ok;
  EXPECT_EQ(ok.substr(ok.size() - 4), "m 1\n");
  EXPECT_EQ(Exchange(port, "GET /metrics?x=1 HTTP/1.0\n\n").rfind("HTTP/1.1 200 OK", 0), 0u);

  EXPECT_EQ(Exchange(port, "GET / HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 404 Not Found", 0), 0u);
  const std::string post = Exchange(port, "POST /metrics HTTP/1.1\r\n\r\n");
  EXPECT_EQ(post.rfind("HTTP/1.1 405 Method Not Allowed", 0), 0u) << post;
  EXPECT_TRUE(Contains(post, "Allow: GET\r\n"));
  EXPECT_EQ(Exchange(port, "garbage\r\n\r\n").rfind("HTTP/1.1 400 Bad Request", 0), 0u);
  EXPECT_EQ(Exchange(port, std::string(9000, 'a')).rfind("HTTP/1.1 431", 0), 0u);
  EXPECT_EQ(Exchange(port, "GET /metrics HTTP/1.1\r\n"), "");  // Closed, never completed.

  // A silent client holds the endpoint for at most its timeout; the next one is served.
  const int silent = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(silent, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  EXPECT_EQ(Exchange(port, "GET /metrics HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 200 OK", 0), 0u);
  close(silent);
}

TEST(MetricsHttpTest, StopsWithASilentClientConnected) {
  auto http = MetricsHttpServer::Start("127.0.0.1:0", [] { return std::string(); });
  ASSERT_TRUE(http.ok());
  const int silent = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>((*http)->port()));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(silent, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  usleep(200 * 1000);  // Let the server accept it and wait for its request.
  http->reset();       // Must not wait out the client's 2 s (the server drops it).
  char byte;
  EXPECT_LE(recv(silent, &byte, 1, 0), 0);  // Closed (or reset) by the server, nothing sent.
  close(silent);
}

TEST(MetricsHttpTest, BadAddressesAreErrors) {
  EXPECT_EQ(MetricsHttpServer::Start("no-port", [] { return std::string(); }).status().code(),
            absl::StatusCode::kInvalidArgument);
  auto first = MetricsHttpServer::Start("127.0.0.1:0", [] { return std::string(); });
  ASSERT_TRUE(first.ok());
  auto taken = MetricsHttpServer::Start("127.0.0.1:" + std::to_string((*first)->port()),
                                        [] { return std::string(); });
  EXPECT_EQ(taken.status().code(), absl::StatusCode::kUnavailable) << taken.status();
}

TEST(MetricsHttpTest, ServerCountsItsRequests) {
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
  EXPECT_TRUE(Contains(text, "myops_requests_total{rpc=\"ScaleShift\",code=\"OK\"} 2\n")) << text;
  EXPECT_TRUE(
      Contains(text, "myops_requests_total{rpc=\"ScaleShift\",code=\"INVALID_ARGUMENT\"} 1\n"));
  EXPECT_TRUE(Contains(text, "myops_request_duration_seconds_count{rpc=\"ScaleShift\"} 2\n"));
  EXPECT_TRUE(Contains(text, "myops_tensor_bytes_total{rpc=\"ScaleShift\"} 2048\n"));
  EXPECT_TRUE(Contains(text, "myops_inflight_requests 0\n"));
}

}  // namespace
}  // namespace myops::server
