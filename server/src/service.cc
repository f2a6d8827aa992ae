// The myops.v1.Myops service (see service.h).
#include "service.h"

#include <deque>
#include <memory>
#include <mutex>

#include <grpc/slice.h>

#include "absl/strings/str_cat.h"
#include "myops/version.h"

namespace myops::server {
namespace {

using Clock = std::chrono::steady_clock;
using myops::v1::ScaleShiftRequest;
using myops::v1::ScaleShiftResponse;
using myops::v1::ScaleShiftStreamResponse;

int64_t Nanos(Clock::duration d) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
}

// gRPC deadlines are wall-clock; the executor works on the monotonic clock.
Clock::time_point ToSteady(std::chrono::system_clock::time_point deadline) {
  const auto now = std::chrono::system_clock::now();
  if (deadline - now > std::chrono::hours(24 * 365)) return Clock::time_point::max();
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(deadline - now);
}

// Requests a single stream may have between being read and their response being
// written; beyond it the stream stops reading (flow control pushes back on the client).
constexpr int kMaxOutstandingPerStream = 32;

// One bidirectional stream: reads requests as they come (pipelining), processes each,
// and writes responses in completion order, one write at a time. Deletes itself in OnDone.
// Guarded by mu_: everything below it.
class StreamReactor final
    : public grpc::ServerBidiReactor<ScaleShiftRequest, ScaleShiftStreamResponse> {
 public:
  StreamReactor(MyopsService* service, grpc::CallbackServerContext* context)
      : service_(service), context_(context) {
    std::lock_guard<std::mutex> lock(mu_);
    ReadNextLocked();
  }

  void OnReadDone(bool ok) override {
    const auto received = Clock::now();
    std::unique_ptr<Item> item;
    {
      std::lock_guard<std::mutex> lock(mu_);
      reading_ = false;
      if (!ok) {
        reads_done_ = true;
        MaybeFinishLocked();
        return;
      }
      item = std::move(pending_);
      ++outstanding_;
      if (outstanding_ < kMaxOutstandingPerStream) ReadNextLocked();
    }
    Item* raw = item.release();  // owned by the write queue once processed
    // gRPC parsed the message before OnReadDone: decode_ns starts after that.
    const std::string& data = raw->request.input().data();
    service_->Process(
        raw->request, {data.size(), [bytes = data.data()] { return bytes; }}, received,
        context_->deadline(), [ctx = context_] { return ctx->IsCancelled(); },
        [raw](const TensorView& input) {
          return PrepareOutput(input, raw->response.mutable_response()->mutable_output());
        },
        [this, raw](absl::Status status, const myops::v1::Timing& timing) {
          service_->metrics().Record(Metrics::Rpc::kScaleShiftStream, status, timing,
                                     raw->request.input().data().size());
          raw->response.set_request_id(raw->request.request_id());
          if (status.ok()) {
            *raw->response.mutable_response()->mutable_timing() = timing;
            raw->response.mutable_response()->set_request_id(raw->request.request_id());
          } else {
            raw->response.mutable_error()->set_code(static_cast<int>(status.code()));
            raw->response.mutable_error()->set_message(std::string(status.message()));
          }
          std::lock_guard<std::mutex> lock(mu_);
          writes_.emplace_back(raw);
          if (!writing_) WriteNextLocked();
        });
  }

  void OnWriteDone(bool /*ok*/) override {
    std::lock_guard<std::mutex> lock(mu_);
    writes_.pop_front();
    writing_ = false;
    --outstanding_;
    if (!writes_.empty()) {
      WriteNextLocked();
    } else if (!reads_done_ && !reading_ && outstanding_ < kMaxOutstandingPerStream) {
      ReadNextLocked();
    }
    MaybeFinishLocked();
  }

  void OnDone() override { delete this; }

 private:
  struct Item {
    ScaleShiftRequest request;
    ScaleShiftStreamResponse response;
  };

  void ReadNextLocked() {
    pending_ = std::make_unique<Item>();
    reading_ = true;
    StartRead(&pending_->request);
  }
  void WriteNextLocked() {
    writing_ = true;
    StartWrite(&writes_.front()->response);
  }
  void MaybeFinishLocked() {
    if (reads_done_ && outstanding_ == 0 && !writing_ && !finished_) {
      finished_ = true;
      Finish(grpc::Status::OK);
    }
  }

  MyopsService* const service_;
  grpc::CallbackServerContext* const context_;
  std::mutex mu_;
  std::unique_ptr<Item> pending_;             // target of the read in progress
  std::deque<std::unique_ptr<Item>> writes_;  // front: the write in progress
  int outstanding_ = 0;                       // read and not yet written
  bool reading_ = false, writing_ = false, reads_done_ = false, finished_ = false;
};

}  // namespace

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

MyopsService::MyopsService(Executor* executor, const ServiceLimits& limits)
    : executor_(executor), limits_(limits), inflight_(limits.max_inflight) {}

void MyopsService::Process(const ScaleShiftRequest& request, InputData input_data,
                           Clock::time_point received,
                           std::chrono::system_clock::time_point deadline,
                           std::function<bool()> is_cancelled, OutputSink output, Done done) {
  const auto start = received;
  if (!inflight_.TryAcquire()) {
    done(absl::ResourceExhaustedError(absl::StrCat("the server is at its limit of ",
                                                   inflight_.limit(),
                                                   " requests in flight; retry later")),
         {});
    return;
  }
  auto fail = [this, &done](absl::Status status) {
    inflight_.Release();
    done(std::move(status), {});
  };
  if (!request.has_input()) {
    return fail(absl::InvalidArgumentError("the request has no 'input' tensor"));
  }
  auto input = DecodeTensorHead(request.input(), input_data.size, "input", limits_.tensor);
  if (!input.ok()) return fail(input.status());
  auto wanted = ParseDeviceRequest(request.device());
  if (!wanted.ok()) return fail(wanted.status());
  auto slot = executor_->devices().Resolve(*wanted, round_robin_.fetch_add(1));
  if (!slot.ok()) return fail(slot.status());
  input->data = input_data.contiguous();
  const auto decoded = Clock::now();

  Job job;
  job.output = output(*input);
  const int64_t encode_ns = Nanos(Clock::now() - decoded);
  job.input = std::move(*input);
  job.alpha = request.alpha();
  job.beta = request.beta();
  job.device_slot = *slot;
  job.deadline = ToSteady(deadline);
  job.is_cancelled = std::move(is_cancelled);
  const int64_t decode_ns = Nanos(decoded - start);
  executor_->Submit(std::move(job), [this, start, decode_ns, encode_ns, done = std::move(done)](
                                        absl::Status status, const JobTiming& t) {
    myops::v1::Timing timing;
    if (status.ok()) {
      timing.set_decode_ns(decode_ns);
      timing.set_queue_ns(t.queue_ns);
      timing.set_compute_ns(t.compute_ns);
      timing.set_encode_ns(encode_ns);
      timing.set_device(t.device);
      timing.set_total_ns(Nanos(Clock::now() - start));
    }
    inflight_.Release();
    done(std::move(status), timing);
  });
}

grpc::ServerUnaryReactor* MyopsService::ScaleShift(grpc::CallbackServerContext* context,
                                                   const grpc::ByteBuffer* request,
                                                   grpc::ByteBuffer* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  // Owns the parsed request, its input's data (in the received slices, or gathered from
  // them into `gathered`: the input view points there) and the output slice until the
  // response is encoded.
  struct Call {
    ScaleShiftRequest request;
    wire::TensorData input;
    grpc::Slice gathered;
    grpc::Slice output;

    const void* ContiguousInput() {
      if (const uint8_t* bytes = input.contiguous()) return bytes;
      gathered = grpc::Slice(grpc_slice_malloc(input.size()), grpc::Slice::STEAL_REF);
      uint8_t* out = const_cast<uint8_t*>(gathered.begin());  // Freshly allocated: ours.
      input.CopyTo(out);
      return out;
    }
  };
  const auto received = Clock::now();  // decode_ns includes parsing and gathering.
  auto call = std::make_shared<Call>();
  if (!ParseRequest(*request, &call->request, &call->input)) {
    const absl::Status invalid =
        absl::InvalidArgumentError("the request is not a valid myops.v1.ScaleShiftRequest");
    metrics_.Record(Metrics::Rpc::kScaleShift, invalid, {}, 0);
    reactor->Finish(ToGrpcStatus(invalid));
    return reactor;
  }
  Process(
      call->request, {call->input.size(), [&call = *call] { return call.ContiguousInput(); }},
      received, context->deadline(), [context] { return context->IsCancelled(); },
      [call](const TensorView& input) { return AllocateOutput(input, &call->output); },
      [this, call, reactor, response](absl::Status status, const myops::v1::Timing& timing) {
        metrics_.Record(Metrics::Rpc::kScaleShift, status, timing, call->input.size());
        if (status.ok()) {
          *response = EncodeResponse(call->request, call->output, timing);
        }
        reactor->Finish(ToGrpcStatus(status));
      });
  return reactor;
}

grpc::ServerBidiReactor<ScaleShiftRequest, ScaleShiftStreamResponse>*
MyopsService::ScaleShiftStream(grpc::CallbackServerContext* context) {
  return new StreamReactor(this, context);
}

grpc::ServerUnaryReactor* MyopsService::ServerInfo(grpc::CallbackServerContext* context,
                                                   const myops::v1::ServerInfoRequest*,
                                                   myops::v1::ServerInfoResponse* response) {
  const RuntimeInfo& info = executor_->info();
  response->set_myops_version(MYOPS_VERSION_STRING);
  response->set_torch_version(info.torch_version);
  response->set_cuda_version(info.cuda_version);
  for (const auto& d : info.devices) {
    auto* device = response->add_devices();
    device->set_name(d.name);
    device->set_description(d.description);
    device->set_total_memory_bytes(d.total_memory_bytes);
  }
  for (const auto& schema : info.operator_schemas) {
    auto* op = response->add_operators();
    op->set_name(schema.substr(0, schema.find('(')));
    op->set_schema(schema);
  }
  auto* limits = response->mutable_limits();
  limits->set_max_message_bytes(limits_.max_message_bytes);
  limits->set_max_elements(limits_.tensor.max_elements);
  limits->set_max_inflight(limits_.max_inflight);
  response->set_workers(info.workers);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace myops::server
