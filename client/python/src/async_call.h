/* Asynchronous calls of myops_client._core.Client (the _start_* methods the
 * asyncio client awaits): the C++ client's asynchronous call is started with
 * the GIL released and returns at once; its completion, on a gRPC thread
 * (or on the thread starting or cancelling the call, when the C++ client
 * finishes it there), pushes the C++ result with the key the caller gave
 * into the caller's CompletionQueue (completion_queue.h), without the GIL.
 * The event loop drains the queue and converts results to Python there. A
 * PendingCall object cancels the call.
 */
#ifndef MYOPS_CLIENT_PYTHON_ASYNC_CALL_H_
#define MYOPS_CLIENT_PYTHON_ASYNC_CALL_H_

#include "completion_queue.h"
#include "module.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <utility>

#include "absl/status/statusor.h"
#include "myops/client/client.h"

namespace myops_python {

/* Where a call started by start_pending finishes: `queue`, under `key`. */
struct Target {
    std::shared_ptr<CompletionQueue> queue;
    uint64_t key;
};

/* The C++ callback of a call that finishes into `target`: its result
 * becomes the value through `convert`, its error the exception of
 * set_status_error, when the queue is drained (FinishedResult). Runs on any
 * thread, GIL held or not; holds no Python object. */
template <typename T>
std::function<void(absl::StatusOr<T>)>
completion_callback(const Target &target,
                    typename FinishedResult<T>::Convert convert)
{
    return [queue = target.queue, key = target.key,
            convert](absl::StatusOr<T> result) {
        queue->Push(std::make_unique<FinishedResult<T>>(key, std::move(result),
                                                        convert));
    };
}

/* Starts a call: `start` runs with the GIL released and returns the call's
 * handle; `cpp_client` (what `start` calls) is then dropped, the GIL still
 * released. `queue_arg` must be an open CompletionQueue and `key_arg` an int
 * in [0, 2**64). Returns a new PendingCall, or NULL with an exception set
 * (TypeError, ValueError for a closed queue, OverflowError) without
 * starting. */
PyObject *start_pending(
    PyObject *client, PyObject *queue_arg, PyObject *key_arg,
    std::shared_ptr<myops::client::Client> *cpp_client,
    const std::function<myops::client::AsyncCall(const Target &)> &start);

}  // namespace myops_python

#endif /* MYOPS_CLIENT_PYTHON_ASYNC_CALL_H_ */
