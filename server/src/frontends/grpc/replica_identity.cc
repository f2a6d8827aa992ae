// The "myops-replica" response metadata (see frontends/grpc/replica_identity.h).
#include "frontends/grpc/replica_identity.h"

#include <limits.h>
#include <unistd.h>

#include <utility>

#include <grpcpp/support/interceptor.h>

namespace myops::server {
namespace {

namespace exp = grpc::experimental;

// Adds the name to the call's initial metadata just before it is sent; everything else
// passes through.
class ReplicaMetadataInterceptor final : public exp::Interceptor {
 public:
  explicit ReplicaMetadataInterceptor(const std::string* name) : name_(name) {}

  void Intercept(exp::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            exp::InterceptionHookPoints::PRE_SEND_INITIAL_METADATA)) {
      methods->GetSendInitialMetadata()->emplace(kReplicaMetadataKey, *name_);
    }
    methods->Proceed();
  }

 private:
  const std::string* const name_;  // The factory's, which outlives every call.
};

class ReplicaMetadataFactoryImpl final : public exp::ServerInterceptorFactoryInterface {
 public:
  explicit ReplicaMetadataFactoryImpl(std::string name) : name_(std::move(name)) {}

  exp::Interceptor* CreateServerInterceptor(exp::ServerRpcInfo*) override {
    return new ReplicaMetadataInterceptor(&name_);  // gRPC deletes it when the call ends.
  }

 private:
  const std::string name_;
};

}  // namespace

std::string HostName() {
  char name[HOST_NAME_MAX + 1] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "";
  return name;
}

std::unique_ptr<exp::ServerInterceptorFactoryInterface> ReplicaMetadataFactory(std::string name) {
  return std::make_unique<ReplicaMetadataFactoryImpl>(std::move(name));
}

}  // namespace myops::server
