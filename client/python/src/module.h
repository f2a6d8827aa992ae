/* Shared declarations of the myops_client._core extension module: its state
 * (types and exception classes, no C globals), the one status-to-exception
 * mapping, the guard that keeps C++ exceptions out of Python, and the GIL
 * release used around RPCs. Style: PEP 7 (the C style of CPython), in C++17.
 *
 * Written against CPython's limited API of 3.11 (Py_LIMITED_API, set by
 * CMakeLists.txt): the one binary (an abi3 module) loads in every CPython from
 * 3.11 on. Only the stable ABI's functions are used: no struct fields of
 * PyTypeObject (type_name, type_alloc, type_free below), no GET/SET_ITEM
 * macros.
 */
#ifndef MYOPS_CLIENT_PYTHON_MODULE_H_
#define MYOPS_CLIENT_PYTHON_MODULE_H_

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <exception>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "myops/client/options.h"
#include "myops/client/results.h"

namespace myops::client {
class Client;
}  // namespace myops::client

namespace myops_python {

/* Number of google.rpc.Code values: OK (0) .. UNAUTHENTICATED (16). */
constexpr int kNumStatusCodes = 17;

/* Per-module state (PEP 573/630): everything the module's objects need,
 * owned by the module object. Heap types find it with find_state(). */
struct ModuleState {
    PyTypeObject *client_type;
    PyTypeObject *result_type;
    PyTypeObject *timing_type;
    PyTypeObject *pending_type; /* PendingCall (async_call.cc) */
    PyTypeObject *queue_type;   /* CompletionQueue (completion_queue.cc) */
    PyTypeObject *stream_type;  /* CallStream (stream_type.cc) */
    /* myops_client.Error and its subclasses, by status code. errors[0] is
     * the base class Error (OK never raises). */
    PyObject *errors[kNumStatusCodes];
};

extern PyModuleDef module_def;

/* The module state of an instance of one of this module's types (or of a
 * subclass). Never NULL for those. */
ModuleState *find_state(PyTypeObject *type);

/* Sets a myops_client.Error subclass for `status` (which must not be OK),
 * with .code, .code_name and .details, and returns NULL. The one place
 * where gRPC/absl statuses become Python exceptions. */
PyObject *set_status_error(ModuleState *state, const absl::Status &status);

/* The exception set, normalized, as a new reference (None when none is
 * set); clears it. */
PyObject *fetch_exception();

/* Sets a Python exception for the C++ exception being handled: MemoryError
 * for std::bad_alloc, RuntimeError otherwise. Call only from a catch block,
 * with the GIL held. */
void set_cpp_exception_error();

/* Runs `body` and returns its result; a C++ exception escaping it becomes a
 * Python exception (set_cpp_exception_error) and `error_value` is returned.
 * Every Python entry point of the module (slots, methods, getters, setters,
 * module exec) runs its body through this, so no C++ exception ever
 * crosses into the interpreter. The GIL must be held when `body` returns or
 * throws (GilRelease restores it during unwinding). */
template <typename Result, typename Body>
Result
guarded(Result error_value, Body &&body) noexcept
{
    try {
        return std::forward<Body>(body)();
    }
    catch (...) {
        set_cpp_exception_error();
        return error_value;
    }
}

/* Releases the GIL for the lifetime of the object (Py_BEGIN/END_ALLOW_THREADS
 * as RAII, so an exception restores it too). No Python API may be used while
 * it lives. */
class GilRelease {
public:
    GilRelease() : state_(PyEval_SaveThread())
    {
    }
    ~GilRelease()
    {
        PyEval_RestoreThread(state_);
    }
    GilRelease(const GilRelease &) = delete;
    GilRelease &operator=(const GilRelease &) = delete;

private:
    PyThreadState *state_;
};

/* The __name__ of `value`'s type, for messages ("?" if it cannot be read;
 * never leaves an exception set). */
std::string type_name(PyObject *value);

/* tp_alloc and tp_free of a type, through PyType_GetSlot. */
inline PyObject *
type_alloc(PyTypeObject *type)
{
    auto alloc =
        reinterpret_cast<allocfunc>(PyType_GetSlot(type, Py_tp_alloc));
    return alloc(type, 0);
}

inline void
type_free(PyTypeObject *type, PyObject *op)
{
    auto free_fn =
        reinterpret_cast<freefunc>(PyType_GetSlot(type, Py_tp_free));
    free_fn(op);
}

/* Drops one reference to the C++ client, with the GIL held. When it is the
 * last one, the client (whose channel shutdown may wait for gRPC's threads)
 * is destroyed with the GIL released, so other Python threads run
 * meanwhile. Other references are held by Client objects and by calls in
 * flight, which drop theirs on gRPC threads (no GIL) or here. */
void drop_client(std::shared_ptr<myops::client::Client> *client);

/* Type specs, one per file; module exec creates the heap types. */
extern PyType_Spec client_spec;
extern PyType_Spec result_spec;
extern PyType_Spec timing_spec;
extern PyType_Spec pending_spec;
extern PyType_Spec queue_spec;
extern PyType_Spec stream_spec;

/* Client.server_info()'s dict of `info` (a new reference), or NULL with an
 * exception set. */
PyObject *server_info_dict(const myops::client::ServerInfo &info);

/* Client.list_operators()'s list of operator dicts (a new reference), or
 * NULL with an exception set. */
PyObject *operators_list(
    const std::vector<myops::client::OperatorDescription> &listing);

/* A new myops_client._core.Result owning `result`'s output bytes (moved). */
PyObject *result_from(ModuleState *state,
                      myops::client::ScaleShiftResult &&result);

/* A new myops_client._core.Timing of `timing`. */
PyObject *timing_from(ModuleState *state, const myops::client::Timing &timing);

/* What every RPC method of Client needs: the call options of its `timeout`
 * (None/NULL: the client's) and `device` (None/NULL: ""), and the C++
 * client of an initialized, open Client (shared, so close() during the call
 * is safe). -1 with TypeError/ValueError otherwise. */
int client_call_setup(PyObject *self, PyObject *timeout, PyObject *device,
                      myops::client::CallOptions *call,
                      std::shared_ptr<myops::client::Client> *client);

/* Client.list_operators(*, timeout=None) and
 * Client._call(op, arguments, device=None, timeout=None, /): the operator
 * table (call.cc). */
PyObject *client_list_operators(PyObject *op, PyObject *args, PyObject *kwds);
PyObject *client_call(PyObject *op, PyObject *const *args, Py_ssize_t nargs,
                      PyObject *kwnames);

/* The asynchronous calls: Client._start_scale_shift, _start_call,
 * _start_server_info, _start_list_operators and _start_health, each
 * (queue, key, <the blocking call's positional arguments>) returning a
 * PendingCall (async_call.h). */
PyObject *client_start_scale_shift(PyObject *op, PyObject *const *args,
                                   Py_ssize_t nargs, PyObject *kwnames);
PyObject *client_start_call(PyObject *op, PyObject *const *args,
                            Py_ssize_t nargs, PyObject *kwnames);
PyObject *client_start_server_info(PyObject *op, PyObject *const *args,
                                   Py_ssize_t nargs, PyObject *kwnames);
PyObject *client_start_list_operators(PyObject *op, PyObject *const *args,
                                      Py_ssize_t nargs, PyObject *kwnames);
PyObject *client_start_health(PyObject *op, PyObject *const *args,
                              Py_ssize_t nargs, PyObject *kwnames);

/* Client._open_stream(device=None, timeout=None, queue=None, key=0, /): a
 * new CallStream (stream_type.cc). */
PyObject *client_open_stream(PyObject *op, PyObject *const *args,
                             Py_ssize_t nargs, PyObject *kwnames);

}  // namespace myops_python

#endif /* MYOPS_CLIENT_PYTHON_MODULE_H_ */
