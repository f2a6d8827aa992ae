/* The completion queue of myops_client.aio
 * (myops_client._core.CompletionQueue): asynchronous calls (async_call.cc)
 * finish into it on gRPC threads without the GIL, and the event loop drains
 * it. A finishing call appends its C++ result to a vector under a mutex and,
 * only when the vector goes from empty to non-empty, writes an eventfd; the
 * event loop watches the eventfd (loop.add_reader) and its reader calls
 * drain(), which takes every finished call in one pass with the GIL held,
 * converts each result to Python there and returns (key, value, error) tuples.
 * No gRPC thread ever takes the GIL or holds a Python reference: a finished
 * call is keyed by an integer the caller chose at the start, and the caller
 * maps keys to its futures.
 */
#ifndef MYOPS_CLIENT_PYTHON_COMPLETION_QUEUE_H_
#define MYOPS_CLIENT_PYTHON_COMPLETION_QUEUE_H_

#include "module.h"

#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"

namespace myops_python {

/* One finished call waiting in a CompletionQueue: its key and its C++ result
 * (no Python objects, so it may be made and destroyed on any thread without
 * the GIL). */
class FinishedCall {
public:
    explicit FinishedCall(uint64_t key) : key_(key)
    {
    }
    virtual ~FinishedCall() = default;
    FinishedCall(const FinishedCall &) = delete;
    FinishedCall &operator=(const FinishedCall &) = delete;

    uint64_t key() const
    {
        return key_;
    }

    /* GIL held, at most once: the call's value as a new reference in
     * *value and 0, or -1 with an exception set (the call's error). */
    virtual int Make(ModuleState *state, PyObject **value) = 0;

private:
    const uint64_t key_;
};

/* A finished call whose result becomes its value through `convert` (NULL
 * with an exception set on failure) and whose error becomes the exception of
 * set_status_error, the one status-to-exception mapping. */
template <typename T>
class FinishedResult final : public FinishedCall {
public:
    using Convert = PyObject *(*)(ModuleState *, T &&);

    FinishedResult(uint64_t key, absl::StatusOr<T> result, Convert convert)
        : FinishedCall(key), result_(std::move(result)), convert_(convert)
    {
    }

    int Make(ModuleState *state, PyObject **value) override
    {
        if (!result_.ok()) {
            set_status_error(state, result_.status());
            return -1;
        }
        *value = convert_(state, std::move(*result_));
        return *value == NULL ? -1 : 0;
    }

private:
    absl::StatusOr<T> result_;
    const Convert convert_;
};

/* The queue itself. Owned jointly (shared_ptr) by its Python object and by
 * every call in flight that finishes into it, so a call may finish after the
 * Python object is gone (its result is then dropped).
 *
 * Thread-safety: Push from any thread, GIL held or not; Take and Close from
 * Python (GIL held, which serializes them), never from a gRPC thread. The
 * eventfd is written and closed under mu_, so a Push never writes to a
 * closed (or reused) descriptor. Push never calls into Python and never
 * blocks on anything but mu_, which no holder keeps across a call into
 * Python or gRPC. */
class CompletionQueue {
public:
    /* A queue with a fresh non-blocking eventfd; NULL with OSError set. GIL
     * held. */
    static std::shared_ptr<CompletionQueue> Create();

    explicit CompletionQueue(int fd) : fd_(fd)
    {
    }
    ~CompletionQueue(); /* closes the eventfd if Close did not */
    CompletionQueue(const CompletionQueue &) = delete;
    CompletionQueue &operator=(const CompletionQueue &) = delete;

    /* Any thread: appends `call`, and writes the eventfd when the queue was
     * empty (one wake-up per batch). After Close, drops `call`. */
    void Push(std::unique_ptr<FinishedCall> call);

    /* Every finished call, in the order they were pushed (empty when none,
     * or when closed). Consumes the eventfd's count first and then takes the
     * vector, so a Push racing with Take either lands in this batch or sees
     * an empty queue and writes the eventfd again: no wake-up is lost. */
    std::vector<std::unique_ptr<FinishedCall>> Take();

    /* Closes the eventfd and drops the calls waiting; later Pushes drop
     * theirs. Idempotent. */
    void Close();

    /* The eventfd, or -1 once closed. */
    int fd();

private:
    std::mutex mu_;
    int fd_ ABSL_GUARDED_BY(mu_);
    std::vector<std::unique_ptr<FinishedCall>> calls_ ABSL_GUARDED_BY(mu_);
};

/* The queue of a myops_client._core.CompletionQueue object (a new shared
 * reference), or NULL with an exception set: TypeError when `op` is not
 * one, ValueError when it is closed. GIL held. */
std::shared_ptr<CompletionQueue> queue_of(ModuleState *state, PyObject *op);

}  // namespace myops_python

#endif /* MYOPS_CLIENT_PYTHON_COMPLETION_QUEUE_H_ */
