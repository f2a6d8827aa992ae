/* myops_client._core.CallStream: one CallStream RPC of the C++ client
 * (pipelined Calls of any served operators, tensors of any size), the native
 * half of myops_client.Stream and myops_client.aio.Stream.
 *
 * A receiver thread (a std::thread that never takes the GIL) takes every
 * response as soon as it arrives (CallStreamSession::Receive, which also
 * reassembles chunked results), so the server never waits for this client to
 * read: a thread that sends never blocks on its own unread responses, at any
 * size or depth. Each response becomes a StreamItem (a FinishedCall, C++ data
 * only) that goes either to the object's own queue, taken by _receive() (the
 * blocking stream), or to an aio client's CompletionQueue under the key given
 * at open (the asyncio stream), where the stream's end is one more item.
 *
 * An item's value: (request_id, (outputs, timing), None) for a result,
 * outputs as _call returns them, or (request_id, None, error) for a request
 * the server failed (the stream goes on). The end's value: None when the
 * stream ended OK with every response received, else its final error is
 * raised (CANCELLED after cancel(), DEADLINE_EXCEEDED, UNAVAILABLE, ...).
 *
 * Ownership and threads: StreamShared (the session, the item queue) is owned
 * jointly by the Python object and the receiver thread. The object owns the
 * thread: dealloc cancels the call unless it has ended and joins the thread
 * with the GIL released. _send and _receive release the GIL while they block;
 * the session serializes sends (and its receives are the thread's alone), so
 * one Python thread may send while another receives.
 */
#include "args.h"
#include "completion_queue.h"
#include "module.h"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "myops/client/client.h"

namespace myops_python {
namespace {

/* One response of the stream, or (end_ set) its end with the final status. */
class StreamItem final : public FinishedCall {
public:
    StreamItem(uint64_t key, absl::StatusOr<mc::CallStreamResult> received)
        : FinishedCall(key), received_(std::move(received))
    {
    }

    int Make(ModuleState *state, PyObject **value) override
    {
        if (!received_.ok()) { /* the end */
            if (received_.status().code() == absl::StatusCode::kOutOfRange) {
                *value = Py_NewRef(Py_None);
                return 0;
            }
            set_status_error(state, received_.status());
            return -1;
        }
        mc::CallStreamResult &r = *received_;
        PyObject *sent;
        PyObject *error;
        if (r.result.ok()) {
            sent = call_result_of(state, *std::move(r.result));
            if (sent == NULL) {
                return -1;
            }
            error = Py_NewRef(Py_None);
        }
        else {
            set_status_error(state, r.result.status());
            error = fetch_exception();
            sent = Py_NewRef(Py_None);
        }
        *value = Py_BuildValue("(KNN)",
                               static_cast<unsigned long long>(r.request_id),
                               sent, error);
        return *value == NULL ? -1 : 0;
    }

private:
    absl::StatusOr<mc::CallStreamResult> received_;
};

/* What the object and its receiver thread share. */
struct StreamShared {
    std::unique_ptr<mc::CallStreamSession> session; /* fixed once opened */
    /* The asyncio stream's completion queue and key; NULL: blocking. */
    std::shared_ptr<CompletionQueue> queue;
    uint64_t key = 0;

    std::mutex mu;
    std::condition_variable changed; /* an item came, or the end */
    std::deque<std::unique_ptr<StreamItem>> items ABSL_GUARDED_BY(mu);
    bool ended ABSL_GUARDED_BY(mu) = false;
    absl::Status final_status ABSL_GUARDED_BY(mu); /* once ended */
};

/* The receiver thread: every response until the stream ends. */
void
receive_all(std::shared_ptr<StreamShared> shared)
{
    for (;;) {
        absl::StatusOr<mc::CallStreamResult> received =
            shared->session->Receive();
        const bool end = !received.ok();
        const absl::Status final_status =
            end ? received.status() : absl::OkStatus();
        auto item =
            std::make_unique<StreamItem>(shared->key, std::move(received));
        if (shared->queue != nullptr) {
            shared->queue->Push(std::move(item));
        }
        else {
            std::lock_guard<std::mutex> lock(shared->mu);
            if (end) {
                shared->ended = true;
                shared->final_status = final_status;
            }
            else {
                shared->items.push_back(std::move(item));
            }
            shared->changed.notify_all();
        }
        if (end) {
            if (shared->queue != nullptr) {
                std::lock_guard<std::mutex> lock(shared->mu);
                shared->ended = true;
                shared->final_status = final_status;
            }
            return;
        }
    }
}

struct StreamObject {
    PyObject_HEAD
    std::shared_ptr<StreamShared> *shared; /* never NULL once made */
    std::thread *receiver;                 /* never NULL once made */
};

StreamShared &
shared_of(PyObject *op)
{
    return **reinterpret_cast<StreamObject *>(op)->shared;
}

void
stream_dealloc(PyObject *op)
{
    PyTypeObject *tp = Py_TYPE(op);
    auto *self = reinterpret_cast<StreamObject *>(op);
    if (self->shared != NULL) {
        GilRelease nogil;
        if (self->receiver != NULL) {
            StreamShared &shared = **self->shared;
            bool ended;
            {
                std::lock_guard<std::mutex> lock(shared.mu);
                ended = shared.ended;
            }
            if (!ended) {
                shared.session->Cancel(); /* dropped unfinished: abandoned */
            }
            self->receiver->join();
            delete self->receiver;
        }
        delete self->shared; /* the session ends here, without the GIL */
    }
    type_free(tp, op);
    Py_DECREF(tp);
}

/* _send(op, arguments, /): validates, copies and writes one request (in
 * chunks when it exceeds the message limit); returns its id. */
PyObject *
stream_send(PyObject *op, PyObject *const *args, Py_ssize_t nargs,
            PyObject *kwnames)
{
    return guarded<PyObject *>(NULL, [&]() -> PyObject * {
        if ((kwnames != NULL && PyTuple_Size(kwnames) > 0) || nargs != 2) {
            PyErr_SetString(PyExc_TypeError,
                            "_send() takes 2 positional arguments (op, "
                            "arguments)");
            return NULL;
        }
        ModuleState *state = find_state(Py_TYPE(op));
        if (state == NULL) {
            return NULL;
        }
        std::string name;
        if (parse_str(args[0], "op", &name) < 0) {
            return NULL;
        }
        /* Declared before the send so that the buffers it borrows are
         * released after it, with the GIL held. */
        CallArguments arguments;
        if (parse_call_arguments(args[1], &arguments) < 0) {
            return NULL;
        }
        StreamShared &shared = shared_of(op);
        absl::StatusOr<uint64_t> id;
        {
            GilRelease nogil;
            id = shared.session->Send(name, arguments.args, arguments.kwargs);
        }
        if (!id.ok()) {
            return set_status_error(state, id.status());
        }
        return PyLong_FromUnsignedLongLong(*id);
    });
}

/* _receive(): the next item's value (blocking stream only). Waits with the
 * GIL released, in slices, so that signals (Ctrl-C) are handled. */
PyObject *
stream_receive(PyObject *op, PyObject *Py_UNUSED(ignored))
{
    return guarded<PyObject *>(NULL, [&]() -> PyObject * {
        ModuleState *state = find_state(Py_TYPE(op));
        if (state == NULL) {
            return NULL;
        }
        StreamShared &shared = shared_of(op);
        if (shared.queue != nullptr) {
            PyErr_SetString(PyExc_ValueError,
                            "the results of an asyncio stream arrive in its "
                            "completion queue");
            return NULL;
        }
        std::unique_ptr<StreamItem> item;
        absl::Status final_status;
        for (;;) {
            bool ready;
            {
                GilRelease nogil;
                std::unique_lock<std::mutex> lock(shared.mu);
                ready = shared.changed.wait_for(
                    lock, std::chrono::milliseconds(100),
                    [&] { return !shared.items.empty() || shared.ended; });
                if (ready && !shared.items.empty()) {
                    item = std::move(shared.items.front());
                    shared.items.pop_front();
                }
                else if (ready) {
                    final_status = shared.final_status;
                }
            }
            if (ready) {
                break;
            }
            if (PyErr_CheckSignals() < 0) {
                return NULL;
            }
        }
        if (item == nullptr) { /* ended */
            if (final_status.code() == absl::StatusCode::kOutOfRange) {
                Py_RETURN_NONE;
            }
            return set_status_error(state, final_status);
        }
        PyObject *value = NULL;
        return item->Make(state, &value) < 0 ? NULL : value;
    });
}

PyObject *
stream_close_send(PyObject *op, PyObject *Py_UNUSED(ignored))
{
    return guarded<PyObject *>(NULL, [&]() -> PyObject * {
        absl::Status status;
        {
            GilRelease nogil;
            status = shared_of(op).session->CloseSend();
        }
        if (!status.ok()) {
            ModuleState *state = find_state(Py_TYPE(op));
            return state == NULL ? NULL : set_status_error(state, status);
        }
        Py_RETURN_NONE;
    });
}

PyObject *
stream_cancel(PyObject *op, PyObject *Py_UNUSED(ignored))
{
    return guarded<PyObject *>(NULL, [&]() -> PyObject * {
        shared_of(op).session->Cancel();
        Py_RETURN_NONE;
    });
}

PyObject *
stream_get_ended(PyObject *op, void *Py_UNUSED(closure))
{
    StreamShared &shared = shared_of(op);
    std::lock_guard<std::mutex> lock(shared.mu);
    return PyBool_FromLong(shared.ended);
}

PyGetSetDef stream_getset[] = {
    {"ended", stream_get_ended, NULL,
     PyDoc_STR("Whether the server has ended the stream (every response "
               "has been taken from the transport)."),
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyMethodDef stream_methods[] = {
    {"_send",
     reinterpret_cast<PyCFunction>(
         reinterpret_cast<void (*)(void)>(stream_send)),
     METH_FASTCALL | METH_KEYWORDS,
     PyDoc_STR("_send(op, arguments, /)\n--\n\n"
               "Sends one Call (arguments in _call's wire form); returns its "
               "request id. The GIL is released while it writes.")},
    {"_receive", stream_receive, METH_NOARGS,
     PyDoc_STR("_receive()\n--\n\n"
               "The next response, as it arrived: (request_id, (outputs, "
               "timing), None) or (request_id, None, error); None once the "
               "stream has ended OK, else raises its final error.")},
    {"close_send", stream_close_send, METH_NOARGS,
     PyDoc_STR("close_send()\n--\n\n"
               "No more requests: the server ends the stream once it has "
               "answered them. Idempotent.")},
    {"cancel", stream_cancel, METH_NOARGS,
     PyDoc_STR("cancel()\n--\n\n"
               "Cancels the RPC: the server stops its work, and the stream "
               "ends with CANCELLED unless it had ended. Idempotent.")},
    {NULL, NULL, 0, NULL},
};

PyType_Slot stream_slots[] = {
    {Py_tp_doc, const_cast<char *>(
                    "One CallStream RPC (made by Client._open_stream); see "
                    "myops_client.Stream.")},
    {Py_tp_dealloc, reinterpret_cast<void *>(stream_dealloc)},
    {Py_tp_getset, stream_getset},
    {Py_tp_methods, stream_methods},
    {0, NULL},
};

}  // namespace

PyType_Spec stream_spec = {
    "myops_client._core.CallStream",
    sizeof(StreamObject),
    0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE |
        Py_TPFLAGS_DISALLOW_INSTANTIATION,
    stream_slots,
};

PyObject *
client_open_stream(PyObject *op, PyObject *const *args, Py_ssize_t nargs,
                   PyObject *kwnames)
{
    return guarded<PyObject *>(NULL, [&]() -> PyObject * {
        if ((kwnames != NULL && PyTuple_Size(kwnames) > 0) || nargs > 4) {
            PyErr_SetString(PyExc_TypeError,
                            "_open_stream() takes up to 4 positional "
                            "arguments (device, timeout, queue, key)");
            return NULL;
        }
        ModuleState *state = find_state(Py_TYPE(op));
        if (state == NULL) {
            return NULL;
        }
        auto shared = std::make_shared<StreamShared>();
        if (nargs > 2 && args[2] != Py_None) {
            shared->queue = queue_of(state, args[2]);
            if (shared->queue == nullptr) {
                return NULL;
            }
            PyObject *key = nargs > 3 ? args[3] : NULL;
            if (key == NULL || !PyLong_Check(key)) {
                PyErr_SetString(PyExc_TypeError,
                                "a stream on a completion queue needs an int "
                                "key");
                return NULL;
            }
            shared->key = PyLong_AsUnsignedLongLong(key);
            if (PyErr_Occurred()) {
                return NULL;
            }
        }
        mc::CallOptions call;
        std::shared_ptr<mc::Client> client;
        if (client_call_setup(op, nargs > 1 ? args[1] : NULL,
                              nargs > 0 ? args[0] : NULL, &call,
                              &client) < 0) {
            return NULL;
        }
        absl::StatusOr<std::unique_ptr<mc::CallStreamSession>> session;
        {
            GilRelease nogil;
            session = client->OpenCallStream(call);
            client.reset();
        }
        if (!session.ok()) {
            return set_status_error(state, session.status());
        }
        shared->session = *std::move(session);
        auto *self =
            reinterpret_cast<StreamObject *>(type_alloc(state->stream_type));
        if (self == NULL) {
            GilRelease nogil;
            shared.reset(); /* cancels the call and waits for its end */
            return NULL;
        }
        self->shared = new std::shared_ptr<StreamShared>(shared);
        self->receiver = new std::thread(receive_all, std::move(shared));
        return reinterpret_cast<PyObject *>(self);
    });
}

}  // namespace myops_python
