/* Asynchronous calls of myops_client._core.Client (see async_call.h): the
 * Completion that hands a result from a gRPC thread to Python, the
 * PendingCall type (cancel()), and the _start_scale_shift,
 * _start_call, _start_server_info, _start_list_operators and _start_health
 * methods.
 *
 * From a thread that is not Python's, the interpreter is entered with a
 * thread state of its own interpreter (PyThreadState_New), not
 * PyGILState_Ensure, which only knows the main interpreter; a thread that
 * already has a state of it (the thread cancelling a call, whose callback
 * gRPC may run inline) re-enters with PyGILState_Ensure. Completions enter
 * through the module's EntryGate, closed at exit: one after that is dropped
 * (leaking its references), since entering a finalizing interpreter would
 * end the gRPC thread with pthread_exit.
 */
#include "async_call.h"

#include "args.h"

#include <optional>
#include <string>
#include <vector>

#include "myops/common/dtype.h"

namespace myops_python {
namespace {

bool
finalizing()
{
#if PY_VERSION_HEX >= 0x030D0000
    return Py_IsFinalizing();
#else
    return _Py_IsFinalizing();
#endif
}

/* The exception set, normalized, as a new reference; clears it. */
PyObject *
fetch_exception()
{
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    PyErr_NormalizeException(&type, &value, &traceback);
    if (value == NULL) {
        value = Py_NewRef(Py_None);
    }
    else if (traceback != NULL) {
        PyException_SetTraceback(value, traceback);
    }
    Py_XDECREF(type);
    Py_XDECREF(traceback);
    return value;
}

}  // namespace

bool
EntryGate::Enter()
{
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) {
        return false;
    }
    ++inside_;
    return true;
}

void
EntryGate::Leave()
{
    std::lock_guard<std::mutex> lock(mu_);
    if (--inside_ == 0) {
        left_.notify_all();
    }
}

void
EntryGate::Close()
{
    GilRelease nogil; /* those inside may be waiting for the GIL */
    std::unique_lock<std::mutex> lock(mu_);
    closed_ = true;
    left_.wait(lock, [this] { return inside_ == 0; });
}

Completion::Completion(PyObject *done, PyTypeObject *type)
    : interp_(PyInterpreterState_Get()),
      starter_(std::this_thread::get_id()),
      done_(Py_NewRef(done)),
      type_(reinterpret_cast<PyTypeObject *>(
          Py_NewRef(reinterpret_cast<PyObject *>(type)))),
      gate_(*static_cast<ModuleState *>(PyType_GetModuleState(type))->gate)
{
}

void
Completion::Complete(Make make)
{
    if (std::this_thread::get_id() == starter_ && starting_.load()) {
        deferred_ = std::move(make); /* EndStart delivers it */
        return;
    }
    if (!gate_->Enter()) {
        return; /* at exit */
    }
    PyThreadState *known = PyGILState_GetThisThreadState();
    PyThreadState *state = NULL;
    if (known != NULL && PyThreadState_GetInterpreter(known) == interp_) {
        PyGILState_STATE gil = PyGILState_Ensure();
        Deliver(make);
        PyGILState_Release(gil);
    }
    else if (!finalizing() && (state = PyThreadState_New(interp_)) != NULL) {
        PyEval_RestoreThread(state);
        Deliver(make);
        PyThreadState_Clear(state);
        PyThreadState_DeleteCurrent();
    }
    gate_->Leave();
}

void
Completion::EndStart()
{
    starting_.store(false);
    if (deferred_) {
        Make make = std::move(deferred_);
        Deliver(make);
    }
}

void
Completion::Deliver(Make &make)
{
    if (done_ == NULL) {
        return;
    }
    ModuleState *state =
        static_cast<ModuleState *>(PyType_GetModuleState(type_));
    PyObject *value = NULL;
    PyObject *error = NULL;
    const int made = state == NULL ? -1 : guarded(-1, [&]() -> int {
        return make(state, &value);
    });
    if (made < 0) {
        Py_CLEAR(value);
        error = fetch_exception();
        value = Py_NewRef(Py_None);
    }
    else {
        error = Py_NewRef(Py_None);
    }
    PyObject *returned =
        PyObject_CallFunctionObjArgs(done_, value, error, NULL);
    if (returned == NULL) {
        /* e.g. the event loop was closed with the call in flight */
        PyErr_WriteUnraisable(done_);
    }
    Py_XDECREF(returned);
    Py_DECREF(value);
    Py_DECREF(error);
    Py_CLEAR(done_);
    Py_CLEAR(type_);
}

namespace {

/* ---- PendingCall ---------------------------------------------------------
 */

struct PendingObject {
    PyObject_HEAD
    mc::AsyncCall *handle; /* never NULL once created by start_pending */
};

void
pending_dealloc(PyObject *op)
{
    PyTypeObject *tp = Py_TYPE(op);
    delete reinterpret_cast<PendingObject *>(op)->handle;
    tp->tp_free(op);
    Py_DECREF(tp);
}

PyObject *
pending_cancel(PyObject *op, PyObject *Py_UNUSED(ignored))
{
    return guarded<PyObject *>(NULL, [&]() -> PyObject * {
        const mc::AsyncCall handle =
            *reinterpret_cast<PendingObject *>(op)->handle;
        {
            /* gRPC may run the call's completion inline, which takes the
             * GIL. */
            GilRelease nogil;
            handle.Cancel();
        }
        Py_RETURN_NONE;
    });
}

PyMethodDef pending_methods[] = {
    {"cancel", pending_cancel, METH_NOARGS,
     PyDoc_STR("cancel()\n--\n\n"
               "Cancel the call (gRPC TryCancel): unless it has already "
               "completed, done(None, Cancelled) follows. Idempotent; "
               "thread-safe.")},
    {NULL, NULL, 0, NULL},
};

PyType_Slot pending_slots[] = {
    {Py_tp_doc,
     const_cast<char *>("An asynchronous call in flight (Client._start_*); "
                        "cancel() cancels it.")},
    {Py_tp_dealloc, reinterpret_cast<void *>(pending_dealloc)},
    {Py_tp_methods, pending_methods},
    {0, NULL},
};

/* ---- the _start_* methods ------------------------------------------------
 */

PyObject *
bool_of(ModuleState *, bool &&value)
{
    return PyBool_FromLong(value);
}

PyObject *
info_of(ModuleState *, mc::ServerInfo &&info)
{
    return server_info_dict(info);
}

PyObject *
operators_of(ModuleState *, std::vector<mc::OperatorDescription> &&listing)
{
    return operators_list(listing);
}

/* Checks the positional argument count of a _start_* method. */
int
check_nargs(const char *name, const char *usage, Py_ssize_t nargs,
            Py_ssize_t lo, Py_ssize_t hi, PyObject *kwnames)
{
    if ((kwnames != NULL && PyTuple_GET_SIZE(kwnames) > 0) || nargs < lo ||
        nargs > hi) {
        PyErr_Format(PyExc_TypeError,
                     "%s() takes %zd to %zd positional arguments (%s), got "
                     "%zd positional and %zd keyword",
                     name, lo, hi, usage, nargs,
                     kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames));
        return -1;
    }
    return 0;
}

}  // namespace

PyType_Spec pending_spec = {
    "myops_client._core.PendingCall",
    sizeof(PendingObject),
    0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE |
        Py_TPFLAGS_DISALLOW_INSTANTIATION,
    pending_slots,
};

PyObject *
start_pending(
    PyObject *client, PyObject *done,
    const std::function<mc::AsyncCall(std::shared_ptr<Completion>)> &start)
{
    if (!PyCallable_Check(done)) {
        PyErr_Format(PyExc_TypeError, "done must be callable, not %.200s",
                     Py_TYPE(done)->tp_name);
        return NULL;
    }
    ModuleState *state = find_state(Py_TYPE(client));
    if (state == NULL) {
        return NULL;
    }
    PendingObject *pending = PyObject_New(PendingObject, state->pending_type);
    if (pending == NULL) {
        return NULL;
    }
    pending->handle = new mc::AsyncCall();
    auto completion = std::make_shared<Completion>(done, state->pending_type);
    {
        GilRelease nogil;
        *pending->handle = start(completion);
    }
    completion->EndStart();
    return reinterpret_cast<PyObject *>(pending);
}

/* _start_scale_shift(done, dtype, shape, data, alpha, beta, device=None,
 * timeout=None, /): x's bytes are copied into the request before this
 * returns. */
PyObject *
client_start_scale_shift(PyObject *op, PyObject *const *args, Py_ssize_t nargs,
                         PyObject *kwnames)
{
    return guarded<PyObject *>(NULL, [&]() -> PyObject * {
        if (check_nargs("_start_scale_shift",
                        "done, dtype, shape, data, alpha, beta[, device[, "
                        "timeout]]",
                        nargs, 6, 8, kwnames) < 0) {
            return NULL;
        }
        ScaleShiftArgs x;
        mc::CallOptions call;
        std::shared_ptr<mc::Client> client;
        if (parse_scale_shift_args(args + 1, &x) < 0 ||
            client_call_setup(op, nargs > 7 ? args[7] : NULL,
                              nargs > 6 ? args[6] : NULL, &call,
                              &client) < 0) {
            return NULL;
        }
        return start_pending(op, args[0], [&](std::shared_ptr<Completion> c) {
            return client->ScaleShiftAsync(
                x.view, x.alpha, x.beta,
                completion_callback<mc::ScaleShiftResult>(c, result_from),
                call);
        });
    });
}

/* _start_server_info(done, timeout=None, /),
 * _start_list_operators(done, timeout=None, /) and
 * _start_health(done, service, timeout=None, /). */
PyObject *
client_start_server_info(PyObject *op, PyObject *const *args, Py_ssize_t nargs,
                         PyObject *kwnames)
{
    return guarded<PyObject *>(NULL, [&]() -> PyObject * {
        mc::CallOptions call;
        std::shared_ptr<mc::Client> client;
        if (check_nargs("_start_server_info", "done[, timeout]", nargs, 1, 2,
                        kwnames) < 0 ||
            client_call_setup(op, nargs > 1 ? args[1] : NULL, NULL, &call,
                              &client) < 0) {
            return NULL;
        }
        return start_pending(op, args[0], [&](std::shared_ptr<Completion> c) {
            return client->GetServerInfoAsync(
                completion_callback<mc::ServerInfo>(c, info_of), call);
        });
    });
}

PyObject *
client_start_list_operators(PyObject *op, PyObject *const *args,
                            Py_ssize_t nargs, PyObject *kwnames)
{
    return guarded<PyObject *>(NULL, [&]() -> PyObject * {
        mc::CallOptions call;
        std::shared_ptr<mc::Client> client;
        if (check_nargs("_start_list_operators", "done[, timeout]", nargs, 1,
                        2, kwnames) < 0 ||
            client_call_setup(op, nargs > 1 ? args[1] : NULL, NULL, &call,
                              &client) < 0) {
            return NULL;
        }
        return start_pending(op, args[0], [&](std::shared_ptr<Completion> c) {
            return client->ListOperatorsAsync(
                completion_callback<std::vector<mc::OperatorDescription>>(
                    c, operators_of),
                call);
        });
    });
}

PyObject *
client_start_health(PyObject *op, PyObject *const *args, Py_ssize_t nargs,
                    PyObject *kwnames)
{
    return guarded<PyObject *>(NULL, [&]() -> PyObject * {
        mc::CallOptions call;
        std::shared_ptr<mc::Client> client;
        if (check_nargs("_start_health", "done, service[, timeout]", nargs, 2,
                        3, kwnames) < 0) {
            return NULL;
        }
        if (!PyUnicode_Check(args[1])) {
            PyErr_Format(PyExc_TypeError, "service must be a str, not %.200s",
                         Py_TYPE(args[1])->tp_name);
            return NULL;
        }
        Py_ssize_t size;
        const char *text = PyUnicode_AsUTF8AndSize(args[1], &size);
        if (text == NULL || client_call_setup(op, nargs > 2 ? args[2] : NULL,
                                              NULL, &call, &client) < 0) {
            return NULL;
        }
        const std::string service(text, static_cast<size_t>(size));
        return start_pending(op, args[0], [&](std::shared_ptr<Completion> c) {
            return client->HealthAsync(
                service, completion_callback<bool>(c, bool_of), call);
        });
    });
}

/* _start_call(done, op, arguments, device=None, timeout=None, /). */
PyObject *
client_start_call(PyObject *op, PyObject *const *args, Py_ssize_t nargs,
                  PyObject *kwnames)
{
    return guarded<PyObject *>(NULL, [&]() -> PyObject * {
        if ((kwnames != NULL && PyTuple_GET_SIZE(kwnames) > 0) || nargs < 3 ||
            nargs > 5) {
            PyErr_Format(PyExc_TypeError,
                         "_start_call() takes 3 to 5 positional arguments "
                         "(done, op, arguments[, device[, timeout]]), got "
                         "%zd positional and %zd keyword",
                         nargs,
                         kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames));
            return NULL;
        }
        std::string name;
        CallArguments arguments; /* the C++ client copies them at start */
        mc::CallOptions call;
        std::shared_ptr<mc::Client> client;
        if (!PyUnicode_Check(args[1])) {
            PyErr_Format(PyExc_TypeError, "op must be a str, not %.200s",
                         Py_TYPE(args[1])->tp_name);
            return NULL;
        }
        Py_ssize_t size;
        const char *text = PyUnicode_AsUTF8AndSize(args[1], &size);
        if (text == NULL) {
            return NULL;
        }
        name.assign(text, static_cast<size_t>(size));
        if (parse_call_arguments(args[2], &arguments) < 0 ||
            client_call_setup(op, nargs > 4 ? args[4] : NULL,
                              nargs > 3 ? args[3] : NULL, &call,
                              &client) < 0) {
            return NULL;
        }
        return start_pending(op, args[0], [&](std::shared_ptr<Completion> c) {
            return client->CallAsync(
                name, arguments.args, arguments.kwargs,
                completion_callback<mc::CallResult>(c, call_result_of), call);
        });
    });
}

}  // namespace myops_python
