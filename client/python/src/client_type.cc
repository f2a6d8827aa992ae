/* myops_client._core.Client: one myops::client::Client (one gRPC channel)
 * per object, shared by every thread that uses the object.
 *
 * Thread-safety: the C++ client is thread-safe; each call copies the
 * shared_ptr to it while holding the GIL and releases the GIL for the RPC, so
 * close() or a second __init__ during calls in flight is safe (the old client
 * lives until those calls return). Whoever drops the last reference
 * destroys it with the GIL released (drop_client, or after the call with the
 * GIL still released). Subclassable; instances
 * have a __dict__ and weak references, and take part in cyclic GC through the
 * __dict__.
 */
#include "args.h"
#include "module.h"

#if PY_VERSION_HEX < 0x030C0000
#include <structmember.h>
#define Py_T_PYSSIZET T_PYSSIZET
#define Py_READONLY READONLY
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "myops/client/client.h"
#include "myops/common/dtype.h"

namespace myops_python {
namespace {

using ClientHandle = std::shared_ptr<mc::Client>;

struct ClientObject {
    PyObject_HEAD
    PyObject *dict;        /* __dict__, or NULL */
    PyObject *weakreflist; /* weak references, or NULL */
    PyObject *target;      /* str; NULL before __init__ */
    double timeout;        /* seconds, > 0: deadline of every call */
    ClientHandle *handle;  /* never NULL; empty before __init__/after close */
};

ClientObject *
as_client(PyObject *op)
{
    return reinterpret_cast<ClientObject *>(op);
}

/* The call options of one call: the per-call timeout (None: the client's)
 * and device (None or str). Results the server wrote to the client's shared
 * memory stay there: the Result (and so every array viewing it) keeps the
 * region until it is gone, no copy. */
int
parse_call_options(ClientObject *self, PyObject *timeout, PyObject *device,
                   mc::CallOptions *call)
{
    call->results_in_shared_memory = true;
    double seconds = self->timeout;
    if (timeout != NULL && timeout != Py_None &&
        parse_timeout(timeout, "timeout", &seconds) < 0) {
        return -1;
    }
    call->deadline = to_millis(seconds);
    if (device != NULL && device != Py_None) {
        if (!PyUnicode_Check(device)) {
            PyErr_Format(PyExc_TypeError,
                         "device must be a str ('', 'cpu', 'cuda', "
                         "'cuda:N'), not %.200s",
                         type_name(device).c_str());
            return -1;
        }
        Py_ssize_t size;
        const char *text = PyUnicode_AsUTF8AndSize(device, &size);
        if (text == NULL) {
            return -1;
        }
        call->device.assign(text, static_cast<size_t>(size));
    }
    return 0;
}

/* The C++ client of an initialized, open Client; ValueError otherwise. */
ClientHandle
open_handle(ClientObject *self)
{
    ClientHandle handle = *self->handle;
    if (handle == nullptr) {
        PyErr_SetString(PyExc_ValueError,
                        self->target == NULL
                            ? "the Client is not initialized (call __init__)"
                            : "the Client is closed");
    }
    return handle;
}

}  // namespace

int
client_call_setup(PyObject *self, PyObject *timeout, PyObject *device,
                  mc::CallOptions *call, ClientHandle *client)
{
    if (parse_call_options(as_client(self), timeout, device, call) < 0) {
        return -1;
    }
    *client = open_handle(as_client(self));
    return *client == nullptr ? -1 : 0;
}

namespace {

/* ---- slots -------------------------------------------------------------- */

PyObject *
client_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    (void)args;
    (void)kwds;
    return guarded<PyObject *>(NULL, [&]() -> PyObject * {
        auto handle = std::make_unique<ClientHandle>();
        ClientObject *self =
            reinterpret_cast<ClientObject *>(type_alloc(type));
        if (self == NULL) {
            return NULL;
        }
        self->timeout = kDefaultTimeout;
        self->handle = handle.release();
        return reinterpret_cast<PyObject *>(self);
    });
}

int
client_init(PyObject *op, PyObject *args, PyObject *kwds)
{
    ClientObject *self = as_client(op);
    return guarded(-1, [&]() -> int {
        mc::ClientOptions options;
        PyObject *target = NULL;
        double timeout = kDefaultTimeout;
        if (parse_client_init(args, kwds, &options, &target, &timeout) < 0) {
            return -1;
        }
        absl::StatusOr<std::unique_ptr<mc::Client>> client =
            mc::Client::Create(std::move(options));
        if (!client.ok()) {
            ModuleState *state = find_state(Py_TYPE(op));
            if (state != NULL) {
                set_status_error(state, client.status());
            }
            return -1;
        }
        ClientHandle old =
            std::exchange(*self->handle, ClientHandle(std::move(*client)));
        drop_client(&old);
        PyObject *old_target = self->target;
        self->target = Py_NewRef(target);
        Py_XDECREF(old_target);
        self->timeout = timeout;
        return 0;
    });
}

int
client_traverse(PyObject *op, visitproc visit, void *arg)
{
    ClientObject *self = as_client(op);
    Py_VISIT(Py_TYPE(op)); /* heap type: instances own a reference */
    Py_VISIT(self->dict);
    return 0;
}

int
client_clear(PyObject *op)
{
    Py_CLEAR(as_client(op)->dict);
    return 0;
}

void
client_dealloc(PyObject *op)
{
    ClientObject *self = as_client(op);
    PyTypeObject *tp = Py_TYPE(op);
    PyObject_GC_UnTrack(op);
    if (self->weakreflist != NULL) {
        PyObject_ClearWeakRefs(op);
    }
    (void)client_clear(op);
    Py_CLEAR(self->target);
    drop_client(
        self->handle); /* the channel closes once calls in flight end */
    delete self->handle;
    self->handle = NULL;
    type_free(tp, op);
    Py_DECREF(tp);
}

PyObject *
client_repr(PyObject *op)
{
    ClientObject *self = as_client(op);
    PyObject *timeout = PyFloat_FromDouble(self->timeout);
    if (timeout == NULL) {
        return NULL;
    }
    PyObject *repr = PyUnicode_FromFormat(
        "<%s target=%R timeout=%R%s>", type_name(op).c_str(),
        self->target != NULL ? self->target : Py_None, timeout,
        *self->handle == nullptr ? " closed" : "");
    Py_DECREF(timeout);
    return repr;
}

/* ---- getters and setters ------------------------------------------------ */

PyObject *
client_get_target(PyObject *op, void *Py_UNUSED(closure))
{
    ClientObject *self = as_client(op);
    return Py_NewRef(self->target != NULL ? self->target : Py_None);
}

PyObject *
client_get_timeout(PyObject *op, void *Py_UNUSED(closure))
{
    return PyFloat_FromDouble(as_client(op)->timeout);
}

int
client_set_timeout(PyObject *op, PyObject *value, void *Py_UNUSED(closure))
{
    if (value == NULL) {
        PyErr_SetString(PyExc_TypeError, "cannot delete the timeout");
        return -1;
    }
    double seconds;
    if (parse_timeout(value, "timeout", &seconds) < 0) {
        return -1;
    }
    as_client(op)->timeout = seconds;
    return 0;
}

PyObject *
client_get_max_message_bytes(PyObject *op, void *Py_UNUSED(closure))
{
    const ClientHandle &handle = *as_client(op)->handle;
    if (handle == nullptr) {
        Py_RETURN_NONE;
    }
    return PyLong_FromLong(handle->options().max_message_bytes);
}

PyObject *
client_get_closed(PyObject *op, void *Py_UNUSED(closure))
{
    return PyBool_FromLong(*as_client(op)->handle == nullptr);
}

/* ---- methods ------------------------------------------------------------ */

/* _scale_shift(dtype, shape, data, alpha, beta, device=None, timeout=None, /)
 * Positional only: this is the fast path the Python layer calls. */
PyObject *
client_scale_shift(PyObject *op, PyTypeObject *defining_class,
                   PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    ClientObject *self = as_client(op);
    return guarded<PyObject *>(NULL, [&]() -> PyObject * {
        if ((kwnames != NULL && PyTuple_Size(kwnames) > 0) || nargs < 5 ||
            nargs > 7) {
            PyErr_Format(PyExc_TypeError,
                         "_scale_shift() takes 5 to 7 positional arguments "
                         "(dtype, shape, data, alpha, beta[, device[, "
                         "timeout]]), got %zd positional and %zd keyword",
                         nargs, kwnames == NULL ? 0 : PyTuple_Size(kwnames));
            return NULL;
        }
        ModuleState *state =
            static_cast<ModuleState *>(PyType_GetModuleState(defining_class));
        ScaleShiftArgs x;
        if (parse_scale_shift_args(args, &x) < 0) {
            return NULL;
        }
        mc::CallOptions call;
        if (parse_call_options(self, nargs > 6 ? args[6] : NULL,
                               nargs > 5 ? args[5] : NULL, &call) < 0) {
            return NULL;
        }
        ClientHandle client = open_handle(self);
        if (client == nullptr) {
            return NULL;
        }
        absl::StatusOr<mc::ScaleShiftResult> result;
        {
            GilRelease nogil;
            result = client->ScaleShift(x.view, x.alpha, x.beta, call);
            client.reset();
        }
        if (!result.ok()) {
            return set_status_error(state, result.status());
        }
        return result_from(state, *std::move(result));
    });
}

PyObject *
client_server_info(PyObject *op, PyObject *args, PyObject *kwds)
{
    ClientObject *self = as_client(op);
    return guarded<PyObject *>(NULL, [&]() -> PyObject * {
        static const char *kwlist[] = {"timeout", NULL};
        PyObject *timeout = NULL;
        if (!PyArg_ParseTupleAndKeywords(args, kwds, "|$O:server_info",
                                         const_cast<char **>(kwlist),
                                         &timeout)) {
            return NULL;
        }
        mc::CallOptions call;
        if (parse_call_options(self, timeout, NULL, &call) < 0) {
            return NULL;
        }
        ClientHandle client = open_handle(self);
        if (client == nullptr) {
            return NULL;
        }
        absl::StatusOr<mc::ServerInfo> info;
        {
            GilRelease nogil;
            info = client->GetServerInfo(call);
            client.reset();
        }
        if (!info.ok()) {
            ModuleState *state = find_state(Py_TYPE(op));
            return state == NULL ? NULL
                                 : set_status_error(state, info.status());
        }
        return server_info_dict(*info);
    });
}

PyObject *
client_health(PyObject *op, PyObject *args, PyObject *kwds)
{
    ClientObject *self = as_client(op);
    return guarded<PyObject *>(NULL, [&]() -> PyObject * {
        static const char *kwlist[] = {"service", "timeout", NULL};
        const char *service = "";
        Py_ssize_t service_size = 0;
        PyObject *timeout = NULL;
        if (!PyArg_ParseTupleAndKeywords(args, kwds, "|s#$O:health",
                                         const_cast<char **>(kwlist), &service,
                                         &service_size, &timeout)) {
            return NULL;
        }
        mc::CallOptions call;
        if (parse_call_options(self, timeout, NULL, &call) < 0) {
            return NULL;
        }
        ClientHandle client = open_handle(self);
        if (client == nullptr) {
            return NULL;
        }
        const std::string name(service, static_cast<size_t>(service_size));
        absl::StatusOr<bool> serving;
        {
            GilRelease nogil;
            serving = client->Health(name, call);
            client.reset();
        }
        if (!serving.ok()) {
            ModuleState *state = find_state(Py_TYPE(op));
            return state == NULL ? NULL
                                 : set_status_error(state, serving.status());
        }
        return PyBool_FromLong(*serving);
    });
}

PyObject *
client_close(PyObject *op, PyObject *Py_UNUSED(ignored))
{
    return guarded<PyObject *>(NULL, [&]() -> PyObject * {
        /* Calls in flight keep their own reference to the C++ client. */
        ClientHandle old;
        old.swap(*as_client(op)->handle);
        drop_client(&old);
        Py_RETURN_NONE;
    });
}

PyMemberDef client_members[] = {
    {"__dictoffset__", Py_T_PYSSIZET, offsetof(ClientObject, dict),
     Py_READONLY, NULL},
    {"__weaklistoffset__", Py_T_PYSSIZET, offsetof(ClientObject, weakreflist),
     Py_READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

PyGetSetDef client_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {"target", client_get_target, NULL,
     PyDoc_STR("The gRPC target (read-only)."), NULL},
    {"timeout", client_get_timeout, client_set_timeout,
     PyDoc_STR("Deadline of every call without its own timeout, seconds "
               "(> 0)."),
     NULL},
    {"max_message_bytes", client_get_max_message_bytes, NULL,
     PyDoc_STR("Largest message sent or received, bytes (read-only; None "
               "when closed)."),
     NULL},
    {"closed", client_get_closed, NULL,
     PyDoc_STR("Whether close() was called (or __init__ was not)."), NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyMethodDef client_methods[] = {
    {"_scale_shift",
     reinterpret_cast<PyCFunction>(
         reinterpret_cast<void (*)(void)>(client_scale_shift)),
     METH_METHOD | METH_FASTCALL | METH_KEYWORDS,
     PyDoc_STR("_scale_shift(dtype, shape, data, alpha, beta, device=None, "
               "timeout=None, /)\n--\n\n"
               "alpha * x + beta on the server, for x given as a dtype code, "
               "a shape and a C-contiguous buffer of its bytes. Returns a "
               "Result. The GIL is released during the call.")},
    {"server_info",
     reinterpret_cast<PyCFunction>(
         reinterpret_cast<void (*)(void)>(client_server_info)),
     METH_VARARGS | METH_KEYWORDS,
     PyDoc_STR("server_info(*, timeout=None)\n--\n\n"
               "The server's versions, devices, operators, limits and "
               "workers, as a dict.")},
    {"health",
     reinterpret_cast<PyCFunction>(
         reinterpret_cast<void (*)(void)>(client_health)),
     METH_VARARGS | METH_KEYWORDS,
     PyDoc_STR("health(service='', *, timeout=None)\n--\n\n"
               "True when the server (or `service`) is SERVING, False when "
               "not; raises Error when the check fails.")},
    {"list_operators",
     reinterpret_cast<PyCFunction>(
         reinterpret_cast<void (*)(void)>(client_list_operators)),
     METH_VARARGS | METH_KEYWORDS,
     PyDoc_STR("list_operators(*, timeout=None)\n--\n\n"
               "The operators the server serves (and those it lists as not "
               "served, with the reason), one dict per overload, as "
               "myops.v1.OperatorInfo: name, overload, schema, arguments "
               "(dicts: name, type, kind, optional, has_default, "
               "default_value, kwarg_only), returns, devices, served, "
               "reason.")},
    {"_call",
     reinterpret_cast<PyCFunction>(
         reinterpret_cast<void (*)(void)>(client_call)),
     METH_FASTCALL | METH_KEYWORDS,
     PyDoc_STR("_call(op, arguments, device=None, timeout=None, /)\n--\n\n"
               "Calls a served operator with arguments in wire form, a "
               "list of (name, field, payload) (see myops_client._values); "
               "returns (outputs, timing), outputs as (field, payload) "
               "pairs, tensors as Results. The GIL is released during the "
               "call.")},
    {"_start_scale_shift",
     reinterpret_cast<PyCFunction>(
         reinterpret_cast<void (*)(void)>(client_start_scale_shift)),
     METH_FASTCALL | METH_KEYWORDS,
     PyDoc_STR("_start_scale_shift(done, dtype, shape, data, alpha, beta, "
               "device=None, timeout=None, /)\n--\n\nStarts _scale_shift "
               "without blocking; done(result, error) follows once, from a "
               "gRPC thread. Returns a PendingCall.")},
    {"_start_call",
     reinterpret_cast<PyCFunction>(
         reinterpret_cast<void (*)(void)>(client_start_call)),
     METH_FASTCALL | METH_KEYWORDS,
     PyDoc_STR(
         "_start_call(done, op, arguments, device=None, timeout=None, "
         "/)\n--\n\nStarts _call without blocking, as _start_scale_shift.")},
    {"_start_server_info",
     reinterpret_cast<PyCFunction>(
         reinterpret_cast<void (*)(void)>(client_start_server_info)),
     METH_FASTCALL | METH_KEYWORDS,
     PyDoc_STR("_start_server_info(done, timeout=None, /)\n--\n\nStarts "
               "server_info() without blocking.")},
    {"_start_list_operators",
     reinterpret_cast<PyCFunction>(
         reinterpret_cast<void (*)(void)>(client_start_list_operators)),
     METH_FASTCALL | METH_KEYWORDS,
     PyDoc_STR("_start_list_operators(done, timeout=None, /)\n--\n\nStarts "
               "list_operators() without blocking.")},
    {"_start_health",
     reinterpret_cast<PyCFunction>(
         reinterpret_cast<void (*)(void)>(client_start_health)),
     METH_FASTCALL | METH_KEYWORDS,
     PyDoc_STR("_start_health(done, service, timeout=None, /)\n--\n\nStarts "
               "health() without blocking.")},
    {"_open_stream",
     reinterpret_cast<PyCFunction>(
         reinterpret_cast<void (*)(void)>(client_open_stream)),
     METH_FASTCALL | METH_KEYWORDS,
     PyDoc_STR("_open_stream(device=None, timeout=None, queue=None, key=0, "
               "/)\n--\n\nOpens a CallStream RPC (its deadline: timeout, or "
               "the client's); returns a CallStream whose responses go to its "
               "own queue, or to `queue` (a CompletionQueue) under `key`.")},
    {"close", client_close, METH_NOARGS,
     PyDoc_STR("close()\n--\n\n"
               "Close the channel (once calls in flight end). Idempotent; "
               "later calls raise ValueError.")},
    {NULL, NULL, 0, NULL},
};

PyType_Slot client_slots[] = {
    {Py_tp_doc,
     const_cast<char *>(
         "Client(target, *, timeout=30.0, max_message_bytes=2**30, "
         "retries=2, retry_backoff=0.1, max_retry_backoff=2.0, "
         "root_certificates=None, private_key=None, certificate_chain=None, "
         "channel_args=None, token=None, load_balancing='round_robin', "
         "health_checking=False)\n--\n\n"
         "A client of a myops server, or of its replicas behind one name, "
         "over one gRPC channel; thread-safe.")},
    {Py_tp_new, reinterpret_cast<void *>(client_new)},
    {Py_tp_init, reinterpret_cast<void *>(client_init)},
    {Py_tp_dealloc, reinterpret_cast<void *>(client_dealloc)},
    {Py_tp_traverse, reinterpret_cast<void *>(client_traverse)},
    {Py_tp_clear, reinterpret_cast<void *>(client_clear)},
    {Py_tp_repr, reinterpret_cast<void *>(client_repr)},
    {Py_tp_members, client_members},
    {Py_tp_getset, client_getset},
    {Py_tp_methods, client_methods},
    {0, NULL},
};

}  // namespace

PyType_Spec client_spec = {
    "myops_client._core.Client",
    sizeof(ClientObject),
    0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC |
        Py_TPFLAGS_IMMUTABLETYPE,
    client_slots,
};

}  // namespace myops_python
