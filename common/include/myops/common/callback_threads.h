// The threads that run gRPC's callbacks in this process: every reactor of every server
// and channel. myops-server sets their count with --grpc-threads, myops-loadtest with
// --client-threads. Only executables link this (target myops_callback_threads): linking it
// replaces gRPC's own callback threads in the whole process.
//
// gRPC 1.51 runs callbacks from one process-wide completion queue, drained by
// max(2, cores/2) "nexting" threads of its own, each of which also polls the sockets (epoll1:
// one designated poller at a time; when it wakes with events it hands that role to
// another waiting thread, a futex wake and two context switches per wake-up). Per small
// request that hand-off costs more than the request itself (bench/README.md, "Callback
// threads"); with one thread there is no one to hand to.
//
// gRPC builds that queue in grpc::CompletionQueue::CallbackAlternativeCQ() and drops it in
// ReleaseCallbackAlternativeCQ() (libgrpc++, called through its PLT). callback_threads.cc
// defines both, so every executable linking it runs them instead (the linker exports an
// executable's definitions of symbols that a linked shared library references). They keep
// gRPC's contract: one queue, counted by every server and channel that uses callbacks and
// shut down with the last, its functors run inline on the draining threads, here
// `CallbackThreads()` of them, named "grpc-callback". Defined only with the gRPC whose
// declarations were checked (grpcpp 1.51); with any other gRPC its own threads run.
//
// Callbacks must not block on another callback: with one thread, nothing else runs meanwhile.
#pragma once

namespace myops {

// The count --grpc-threads 0 picks: one thread per four hardware threads, 1 to 16.
int DefaultCallbackThreads();

// The threads the queue starts with when it is next created (when no server or channel
// holds it): `threads` (clamped to 1..64), or DefaultCallbackThreads() for 0. Thread-safe.
void SetCallbackThreads(int threads);

// How many threads drain the queue now: 0 when none runs (no server or channel holds the
// queue) or gRPC's own threads do (another gRPC). Thread-safe.
int CallbackThreads();

}  // namespace myops
