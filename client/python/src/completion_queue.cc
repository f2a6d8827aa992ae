/* myops_client._core.CompletionQueue (see completion_queue.h): the queue
 * asynchronous calls finish into, and its Python type: fileno(), drain(),
 * close(), closed, and _post() (a test hook that finishes a call of the
 * caller's making from the calling thread).
 */
#include "completion_queue.h"

#include <errno.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>

namespace myops_python {

std::shared_ptr<CompletionQueue>
CompletionQueue::Create()
{
    const int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (fd < 0) {
        PyErr_SetFromErrno(PyExc_OSError);
        return nullptr;
    }
    return std::make_shared<CompletionQueue>(fd);
}

CompletionQueue::~CompletionQueue()
{
    Close();
}

void
CompletionQueue::Push(std::unique_ptr<FinishedCall> call)
{
    std::lock_guard<std::mutex> lock(mu_);
    if (fd_ < 0) {
        return; /* closed: `call` is dropped as it goes out of scope */
    }
    const bool was_empty = calls_.empty();
    calls_.push_back(std::move(call));
    if (was_empty) {
        const uint64_t one = 1;
        /* Cannot fail but for EINTR: the count never nears its limit, since
         * Take resets it. */
        while (write(fd_, &one, sizeof one) < 0 && errno == EINTR) {
        }
    }
}

std::vector<std::unique_ptr<FinishedCall>>
CompletionQueue::Take()
{
    std::vector<std::unique_ptr<FinishedCall>> calls;
    std::lock_guard<std::mutex> lock(mu_);
    if (fd_ < 0) {
        return calls;
    }
    uint64_t count;
    /* EAGAIN when nothing was written since the last Take. */
    while (read(fd_, &count, sizeof count) < 0 && errno == EINTR) {
    }
    calls.swap(calls_);
    return calls;
}

void
CompletionQueue::Close()
{
    std::vector<std::unique_ptr<FinishedCall>> dropped;
    std::lock_guard<std::mutex> lock(mu_);
    if (fd_ >= 0) {
        close(fd_);
        fd_ = -1;
    }
    dropped.swap(calls_);
}

int
CompletionQueue::fd()
{
    std::lock_guard<std::mutex> lock(mu_);
    return fd_;
}

namespace {

struct QueueObject {
    PyObject_HEAD
    /* never NULL once made by queue_new; the queue may be closed */
    std::shared_ptr<CompletionQueue> *queue;
};

CompletionQueue &
queue(PyObject *op)
{
    return **reinterpret_cast<QueueObject *>(op)->queue;
}

/* The (key, value, error) tuple of a finished call. */
PyObject *
outcome_of(ModuleState *state, FinishedCall &call)
{
    PyObject *value = NULL;
    PyObject *error;
    const int made =
        guarded(-1, [&]() -> int { return call.Make(state, &value); });
    if (made < 0) {
        Py_CLEAR(value);
        error = fetch_exception();
        value = Py_NewRef(Py_None);
    }
    else {
        error = Py_NewRef(Py_None);
    }
    PyObject *key = PyLong_FromUnsignedLongLong(call.key());
    PyObject *outcome = key == NULL ? NULL : PyTuple_New(3);
    if (outcome == NULL) {
        Py_XDECREF(key);
        Py_DECREF(value);
        Py_DECREF(error);
        return NULL;
    }
    PyTuple_SetItem(outcome, 0, key);
    PyTuple_SetItem(outcome, 1, value);
    PyTuple_SetItem(outcome, 2, error);
    return outcome;
}

PyObject *
queue_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    return guarded<PyObject *>(NULL, [&]() -> PyObject * {
        if (PyTuple_Size(args) != 0 ||
            (kwds != NULL && PyDict_Size(kwds) != 0)) {
            PyErr_SetString(PyExc_TypeError,
                            "CompletionQueue() takes no arguments");
            return NULL;
        }
        std::shared_ptr<CompletionQueue> made = CompletionQueue::Create();
        if (made == nullptr) {
            return NULL;
        }
        auto *self = reinterpret_cast<QueueObject *>(type_alloc(type));
        if (self == NULL) {
            return NULL;
        }
        self->queue = new std::shared_ptr<CompletionQueue>(std::move(made));
        return reinterpret_cast<PyObject *>(self);
    });
}

void
queue_dealloc(PyObject *op)
{
    PyTypeObject *tp = Py_TYPE(op);
    auto *self = reinterpret_cast<QueueObject *>(op);
    if (self->queue != NULL) {
        (*self->queue)->Close(); /* calls in flight keep the C++ queue */
        delete self->queue;
    }
    type_free(tp, op);
    Py_DECREF(tp);
}

PyObject *
queue_fileno(PyObject *op, PyObject *Py_UNUSED(ignored))
{
    const int fd = queue(op).fd();
    if (fd < 0) {
        PyErr_SetString(PyExc_ValueError, "the completion queue is closed");
        return NULL;
    }
    return PyLong_FromLong(fd);
}

PyObject *
queue_drain(PyObject *op, PyObject *Py_UNUSED(ignored))
{
    return guarded<PyObject *>(NULL, [&]() -> PyObject * {
        ModuleState *state = find_state(Py_TYPE(op));
        if (state == NULL) {
            return NULL;
        }
        std::vector<std::unique_ptr<FinishedCall>> calls = queue(op).Take();
        PyObject *outcomes = PyList_New(static_cast<Py_ssize_t>(calls.size()));
        if (outcomes == NULL) {
            return NULL;
        }
        for (size_t i = 0; i < calls.size(); ++i) {
            PyObject *outcome = outcome_of(state, *calls[i]);
            if (outcome == NULL) {
                /* Out of memory: the calls not returned are lost. */
                Py_DECREF(outcomes);
                return NULL;
            }
            PyList_SetItem(outcomes, static_cast<Py_ssize_t>(i), outcome);
        }
        return outcomes;
    });
}

PyObject *
queue_close(PyObject *op, PyObject *Py_UNUSED(ignored))
{
    return guarded<PyObject *>(NULL, [&]() -> PyObject * {
        queue(op).Close();
        Py_RETURN_NONE;
    });
}

/* Finishes a call of key `key` whose value is the int `value`, or, when
 * `code` is not 0, whose error is that status: what a gRPC thread does, from
 * the calling thread with the GIL released. */
PyObject *
queue_post(PyObject *op, PyObject *args)
{
    return guarded<PyObject *>(NULL, [&]() -> PyObject * {
        unsigned long long key;
        long long value;
        int code = 0;
        if (!PyArg_ParseTuple(args, "KL|i:_post", &key, &value, &code)) {
            return NULL;
        }
        absl::StatusOr<int64_t> result = static_cast<int64_t>(value);
        if (code != 0) {
            result = absl::Status(static_cast<absl::StatusCode>(code),
                                  "posted error");
        }
        auto call = std::make_unique<FinishedResult<int64_t>>(
            key, std::move(result),
            [](ModuleState *, int64_t &&v) -> PyObject * {
                return PyLong_FromLongLong(v);
            });
        std::shared_ptr<CompletionQueue> shared =
            *reinterpret_cast<QueueObject *>(op)->queue;
        {
            GilRelease nogil;
            shared->Push(std::move(call));
        }
        Py_RETURN_NONE;
    });
}

PyObject *
queue_get_closed(PyObject *op, void *Py_UNUSED(closure))
{
    return PyBool_FromLong(queue(op).fd() < 0);
}

PyMethodDef queue_methods[] = {
    {"fileno", queue_fileno, METH_NOARGS,
     PyDoc_STR("fileno()\n--\n\n"
               "The eventfd that becomes readable when calls have finished "
               "(watch it with loop.add_reader). ValueError once closed.")},
    {"drain", queue_drain, METH_NOARGS,
     PyDoc_STR("drain()\n--\n\n"
               "Takes every finished call, in order, as (key, value, error) "
               "tuples (error None on success), and resets the eventfd. [] "
               "when none, or when closed.")},
    {"close", queue_close, METH_NOARGS,
     PyDoc_STR("close()\n--\n\n"
               "Closes the eventfd and drops finished calls not drained; "
               "calls finishing later are dropped. Idempotent.")},
    {"_post", queue_post, METH_VARARGS,
     PyDoc_STR("_post(key, value, code=0, /)\n--\n\n"
               "Finish a call (value an int; an error of status `code` when "
               "not 0) from this thread, without the GIL (for tests).")},
    {NULL, NULL, 0, NULL},
};

PyGetSetDef queue_getset[] = {
    {"closed", queue_get_closed, NULL,
     PyDoc_STR("Whether close() was called."), NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyType_Slot queue_slots[] = {
    {Py_tp_doc,
     const_cast<char *>(
         "CompletionQueue()\n--\n\n"
         "Where asynchronous calls (Client._start_*) finish: drained on the "
         "event loop when fileno() is readable.")},
    {Py_tp_new, reinterpret_cast<void *>(queue_new)},
    {Py_tp_dealloc, reinterpret_cast<void *>(queue_dealloc)},
    {Py_tp_methods, queue_methods},
    {Py_tp_getset, queue_getset},
    {0, NULL},
};

}  // namespace

PyType_Spec queue_spec = {
    "myops_client._core.CompletionQueue",          sizeof(QueueObject), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE, queue_slots,
};

std::shared_ptr<CompletionQueue>
queue_of(ModuleState *state, PyObject *op)
{
    if (!PyObject_TypeCheck(op, state->queue_type)) {
        PyErr_Format(PyExc_TypeError,
                     "queue must be a CompletionQueue, not %.200s",
                     type_name(op).c_str());
        return nullptr;
    }
    std::shared_ptr<CompletionQueue> shared =
        *reinterpret_cast<QueueObject *>(op)->queue;
    if (shared->fd() < 0) {
        PyErr_SetString(PyExc_ValueError, "the completion queue is closed");
        return nullptr;
    }
    return shared;
}

}  // namespace myops_python
