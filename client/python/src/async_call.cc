/* Asynchronous calls of myops_client._core.Client (see async_call.h): the
 * PendingCall type (cancel()), and the _start_scale_shift, _start_call,
 * _start_server_info, _start_list_operators and _start_health methods, each
 * (queue, key, <the blocking call's positional arguments>).
 *
 * No completion enters the interpreter: a call finishes into its
 * CompletionQueue (completion_queue.h), so gRPC threads never take the GIL
 * and need no thread state, and nothing is left to do at interpreter exit.
 */
#include "async_call.h"

#include "args.h"

#include <string>
#include <vector>

#include "myops/common/dtype.h"

namespace myops_python {

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
    type_free(tp, op);
    Py_DECREF(tp);
}

PyObject *
pending_cancel(PyObject *op, PyObject *Py_UNUSED(ignored))
{
    return guarded<PyObject *>(NULL, [&]() -> PyObject * {
        const mc::AsyncCall handle =
            *reinterpret_cast<PendingObject *>(op)->handle;
        {
            /* Cancel may finish the call inline (a Push, which needs no
             * GIL) and takes gRPC's locks: no reason to hold the GIL. */
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
               "completed, it finishes into its queue with Cancelled. "
               "Idempotent; thread-safe.")},
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
    if ((kwnames != NULL && PyTuple_Size(kwnames) > 0) || nargs < lo ||
        nargs > hi) {
        PyErr_Format(PyExc_TypeError,
                     "%s() takes %zd to %zd positional arguments (%s), got "
                     "%zd positional and %zd keyword",
                     name, lo, hi, usage, nargs,
                     kwnames == NULL ? 0 : PyTuple_Size(kwnames));
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
start_pending(PyObject *client, PyObject *queue_arg, PyObject *key_arg,
              std::shared_ptr<mc::Client> *cpp_client,
              const std::function<mc::AsyncCall(const Target &)> &start)
{
    ModuleState *state = find_state(Py_TYPE(client));
    if (state == NULL) {
        return NULL;
    }
    Target target;
    target.queue = queue_of(state, queue_arg);
    if (target.queue == nullptr) {
        return NULL;
    }
    if (!PyLong_Check(key_arg)) {
        PyErr_Format(PyExc_TypeError, "key must be an int, not %.200s",
                     type_name(key_arg).c_str());
        return NULL;
    }
    target.key = PyLong_AsUnsignedLongLong(key_arg);
    if (target.key == static_cast<uint64_t>(-1) && PyErr_Occurred()) {
        return NULL;
    }
    PendingObject *pending = PyObject_New(PendingObject, state->pending_type);
    if (pending == NULL) {
        return NULL;
    }
    pending->handle = new mc::AsyncCall();
    {
        GilRelease nogil;
        *pending->handle = start(target);
        cpp_client->reset(); /* the call in flight keeps what it needs */
    }
    return reinterpret_cast<PyObject *>(pending);
}

/* _start_scale_shift(queue, key, dtype, shape, data, alpha, beta,
 * device=None, timeout=None, /): x's bytes are copied into the request
 * before this returns. */
PyObject *
client_start_scale_shift(PyObject *op, PyObject *const *args, Py_ssize_t nargs,
                         PyObject *kwnames)
{
    return guarded<PyObject *>(NULL, [&]() -> PyObject * {
        if (check_nargs("_start_scale_shift",
                        "queue, key, dtype, shape, data, alpha, beta[, "
                        "device[, timeout]]",
                        nargs, 7, 9, kwnames) < 0) {
            return NULL;
        }
        ScaleShiftArgs x;
        mc::CallOptions call;
        std::shared_ptr<mc::Client> client;
        if (parse_scale_shift_args(args + 2, &x) < 0 ||
            client_call_setup(op, nargs > 8 ? args[8] : NULL,
                              nargs > 7 ? args[7] : NULL, &call,
                              &client) < 0) {
            return NULL;
        }
        return start_pending(
            op, args[0], args[1], &client, [&](const Target &t) {
                return client->ScaleShiftAsync(
                    x.view, x.alpha, x.beta,
                    completion_callback<mc::ScaleShiftResult>(t, result_from),
                    call);
            });
    });
}

/* _start_server_info(queue, key, timeout=None, /),
 * _start_list_operators(queue, key, timeout=None, /) and
 * _start_health(queue, key, service, timeout=None, /). */
PyObject *
client_start_server_info(PyObject *op, PyObject *const *args, Py_ssize_t nargs,
                         PyObject *kwnames)
{
    return guarded<PyObject *>(NULL, [&]() -> PyObject * {
        mc::CallOptions call;
        std::shared_ptr<mc::Client> client;
        if (check_nargs("_start_server_info", "queue, key[, timeout]", nargs,
                        2, 3, kwnames) < 0 ||
            client_call_setup(op, nargs > 2 ? args[2] : NULL, NULL, &call,
                              &client) < 0) {
            return NULL;
        }
        return start_pending(
            op, args[0], args[1], &client, [&](const Target &t) {
                return client->GetServerInfoAsync(
                    completion_callback<mc::ServerInfo>(t, info_of), call);
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
        if (check_nargs("_start_list_operators", "queue, key[, timeout]",
                        nargs, 2, 3, kwnames) < 0 ||
            client_call_setup(op, nargs > 2 ? args[2] : NULL, NULL, &call,
                              &client) < 0) {
            return NULL;
        }
        return start_pending(
            op, args[0], args[1], &client, [&](const Target &t) {
                return client->ListOperatorsAsync(
                    completion_callback<std::vector<mc::OperatorDescription>>(
                        t, operators_of),
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
        if (check_nargs("_start_health", "queue, key, service[, timeout]",
                        nargs, 3, 4, kwnames) < 0) {
            return NULL;
        }
        if (!PyUnicode_Check(args[2])) {
            PyErr_Format(PyExc_TypeError, "service must be a str, not %.200s",
                         type_name(args[2]).c_str());
            return NULL;
        }
        Py_ssize_t size;
        const char *text = PyUnicode_AsUTF8AndSize(args[2], &size);
        if (text == NULL || client_call_setup(op, nargs > 3 ? args[3] : NULL,
                                              NULL, &call, &client) < 0) {
            return NULL;
        }
        const std::string service(text, static_cast<size_t>(size));
        return start_pending(
            op, args[0], args[1], &client, [&](const Target &t) {
                return client->HealthAsync(
                    service, completion_callback<bool>(t, bool_of), call);
            });
    });
}

/* _start_call(queue, key, op, arguments, device=None, timeout=None, /). */
PyObject *
client_start_call(PyObject *op, PyObject *const *args, Py_ssize_t nargs,
                  PyObject *kwnames)
{
    return guarded<PyObject *>(NULL, [&]() -> PyObject * {
        if (check_nargs("_start_call",
                        "queue, key, op, arguments[, device[, timeout]]",
                        nargs, 4, 6, kwnames) < 0) {
            return NULL;
        }
        std::string name;
        CallArguments arguments; /* the C++ client copies them at start */
        mc::CallOptions call;
        std::shared_ptr<mc::Client> client;
        if (!PyUnicode_Check(args[2])) {
            PyErr_Format(PyExc_TypeError, "op must be a str, not %.200s",
                         type_name(args[2]).c_str());
            return NULL;
        }
        Py_ssize_t size;
        const char *text = PyUnicode_AsUTF8AndSize(args[2], &size);
        if (text == NULL) {
            return NULL;
        }
        name.assign(text, static_cast<size_t>(size));
        if (parse_call_arguments(args[3], &arguments) < 0 ||
            client_call_setup(op, nargs > 5 ? args[5] : NULL,
                              nargs > 4 ? args[4] : NULL, &call,
                              &client) < 0) {
            return NULL;
        }
        return start_pending(
            op, args[0], args[1], &client, [&](const Target &t) {
                return client->CallAsync(
                    name, arguments.args, arguments.kwargs,
                    completion_callback<mc::CallResult>(t, call_result_of),
                    call);
            });
    });
}

}  // namespace myops_python
