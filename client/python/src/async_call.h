/* Asynchronous calls of myops_client._core.Client (the _start_* methods the
 * asyncio client awaits): the C++ client's asynchronous call is started with
 * the GIL released and returns at once; its completion, on a gRPC thread,
 * takes the GIL briefly and calls the Python `done(value, error)` the
 * caller gave (myops_client.aio passes loop.call_soon_threadsafe bound to
 * its future). A PendingCall object cancels the call.
 */
#ifndef MYOPS_CLIENT_PYTHON_ASYNC_CALL_H_
#define MYOPS_CLIENT_PYTHON_ASYNC_CALL_H_

#include "module.h"

#include <atomic>
#include <functional>
#include <memory>
#include <thread>
#include <utility>

#include "absl/status/statusor.h"
#include "myops/client/client.h"

namespace myops_python {

/* The Python side of one asynchronous call: `done` and how to reach the
 * interpreter from any thread. Complete() runs exactly once (the C++
 * client's contract), on a gRPC thread, on a thread cancelling the call, or
 * on the starting thread during the start, where it is deferred to
 * EndStart() (the GIL is released there, but the PendingCall does not exist
 * yet). References are dropped with the GIL held, in Complete. */
class Completion {
public:
    /* Makes done's `value` (a new reference); -1 with an exception set,
     * which becomes done's `error`. Runs with the GIL held. */
    using Make = std::function<int(ModuleState *state, PyObject **value)>;

    /* Needs the GIL. Takes new references to `done` and `type` (a type of
     * this module, for its state). */
    Completion(PyObject *done, PyTypeObject *type);
    Completion(const Completion &) = delete;
    Completion &operator=(const Completion &) = delete;

    /* Any thread, GIL not held. */
    void Complete(Make make);

    /* On the starting thread, GIL held: the start has returned; runs a
     * completion deferred during it. */
    void EndStart();

private:
    void Deliver(Make &make); /* GIL held */

    PyInterpreterState *const interp_;
    const std::thread::id starter_;
    std::atomic<bool> starting_{true};
    Make deferred_; /* only touched by the starting thread */
    PyObject *done_;
    PyTypeObject *type_;
    std::shared_ptr<EntryGate> gate_;
};

/* The C++ callback of a call whose result becomes done's value through
 * `convert` (NULL with an exception set on failure) and whose error becomes
 * the exception of set_status_error. */
template <typename T>
std::function<void(absl::StatusOr<T>)>
completion_callback(std::shared_ptr<Completion> completion,
                    PyObject *(*convert)(ModuleState *, T &&))
{
    return [completion, convert](absl::StatusOr<T> result) {
        auto held = std::make_shared<absl::StatusOr<T>>(std::move(result));
        completion->Complete(
            [held, convert](ModuleState *state, PyObject **value) -> int {
                if (!held->ok()) {
                    set_status_error(state, held->status());
                    return -1;
                }
                *value = convert(state, std::move(**held));
                return *value == NULL ? -1 : 0;
            });
    };
}

/* Starts a call: `start` runs with the GIL released and returns the call's
 * handle. Returns a new PendingCall, or NULL with an exception set (TypeError
 * when `done` is not callable) without starting. */
PyObject *start_pending(
    PyObject *client, PyObject *done,
    const std::function<myops::client::AsyncCall(std::shared_ptr<Completion>)>
        &start);

}  // namespace myops_python

#endif /* MYOPS_CLIENT_PYTHON_ASYNC_CALL_H_ */
