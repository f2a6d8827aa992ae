// The replica's identity on the wire: every response of every RPC (myops.v1, health,
// reflection) carries the server's replica name as initial metadata "myops-replica", so
// clients balancing over many replicas can tell which one served them.
#pragma once

#include <memory>
#include <string>

#include <grpcpp/support/server_interceptor.h>

namespace myops::server {

// The initial-metadata key of the replica name.
inline constexpr char kReplicaMetadataKey[] = "myops-replica";

// This machine's host name (in Kubernetes: the pod's name), or "" when it cannot be read.
std::string HostName();

// An interceptor factory adding "myops-replica: <name>" to the initial metadata of every
// response. `name` must be a valid metadata value (visible ASCII and spaces; the config
// checks it). Thread-safe; the factory must outlive the server (ServerBuilder owns it).
std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> ReplicaMetadataFactory(
    std::string name);

}  // namespace myops::server
