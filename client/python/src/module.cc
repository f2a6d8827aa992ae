/* myops_client._core: the native core of the myops Python client. Module
 * definition with multi-phase init (Py_mod_exec), module state instead of C
 * globals, the exception hierarchy (myops_client.Error and one subclass per
 * gRPC status code), the dtype table (DTYPES) and the one function mapping
 * statuses to exceptions.
 * The types live in client_type.cc, result_type.cc, async_call.cc,
 * completion_queue.cc and stream_type.cc.
 */
#include "module.h"

#include <string>

#include "absl/strings/string_view.h"
#include "myops/common/dtype.h"

namespace myops_python {
namespace {

/* One exception class per gRPC status code, in code order; some also derive
 * from the built-in exception a Python user would catch (error_extra_base). */
constexpr const char *kErrorNames[kNumStatusCodes] = {
    "Error",              /* base class; code 0 never raises */
    "Cancelled",          /* 1 */
    "Unknown",            /* 2 */
    "InvalidArgument",    /* 3, also ValueError */
    "DeadlineExceeded",   /* 4, also TimeoutError */
    "NotFound",           /* 5 */
    "AlreadyExists",      /* 6 */
    "PermissionDenied",   /* 7 */
    "ResourceExhausted",  /* 8 */
    "FailedPrecondition", /* 9 */
    "Aborted",            /* 10 */
    "OutOfRange",         /* 11 */
    "Unimplemented",      /* 12 */
    "Internal",           /* 13 */
    "Unavailable",        /* 14, also ConnectionError */
    "DataLoss",           /* 15 */
    "Unauthenticated",    /* 16 */
};

/* The built-in exception a status code's class also derives from, or NULL. */
PyObject *
error_extra_base(int code)
{
    switch (static_cast<absl::StatusCode>(code)) {
    case absl::StatusCode::kInvalidArgument:
        return PyExc_ValueError;
    case absl::StatusCode::kDeadlineExceeded:
        return PyExc_TimeoutError;
    case absl::StatusCode::kUnavailable:
        return PyExc_ConnectionError;
    default:
        return NULL;
    }
}

/* Creates myops_client.<name> with class attributes code, code_name and
 * details (the latter overridden per instance by set_status_error). */
PyObject *
new_error_class(int code, PyObject *base)
{
    const std::string qualified =
        std::string("myops_client.") + kErrorNames[code];
    const int class_code =
        code == 0 ? static_cast<int>(absl::StatusCode::kUnknown) : code;
    const std::string code_name =
        absl::StatusCodeToString(static_cast<absl::StatusCode>(class_code));
    PyObject *dict =
        Py_BuildValue("{s:i,s:s,s:s}", "code", class_code, "code_name",
                      code_name.c_str(), "details", "");
    if (dict == NULL) {
        return NULL;
    }
    PyObject *bases;
    PyObject *extra = error_extra_base(code);
    if (extra != NULL) {
        bases = PyTuple_Pack(2, base, extra);
    }
    else {
        bases = Py_NewRef(base);
    }
    if (bases == NULL) {
        Py_DECREF(dict);
        return NULL;
    }
    std::string doc =
        code == 0
            ? std::string(
                  "A failed myops call. .code (int) and .code_name (e.g. "
                  "'UNAVAILABLE') are the gRPC status code, .details the "
                  "message saying what was wrong.")
            : "A myops call failed with gRPC status " + code_name + ".";
    PyObject *cls =
        PyErr_NewExceptionWithDoc(qualified.c_str(), doc.c_str(), bases, dict);
    Py_DECREF(bases);
    Py_DECREF(dict);
    return cls;
}

/* DTYPES: the dtype table (myops/common/dtype.h) as a tuple of
 * (code, name, itemsize, numpy_str or None, is_floating) tuples, in code
 * order: the Python layer builds its conversions from it. */
PyObject *
new_dtype_table()
{
    PyObject *table = PyTuple_New(myops::kNumDTypes);
    if (table == NULL) {
        return NULL;
    }
    for (int i = 0; i < myops::kNumDTypes; ++i) {
        const myops::DTypeInfo &info = myops::kDTypeTable[i];
        PyObject *numpy_str =
            info.numpy_str.empty()
                ? Py_NewRef(Py_None)
                : PyUnicode_FromStringAndSize(
                      info.numpy_str.data(),
                      static_cast<Py_ssize_t>(info.numpy_str.size()));
        PyObject *entry =
            numpy_str == NULL
                ? NULL
                : Py_BuildValue("(is#LNO)", static_cast<int>(info.dtype),
                                info.name.data(),
                                static_cast<Py_ssize_t>(info.name.size()),
                                static_cast<long long>(info.item_size),
                                numpy_str,
                                info.is_floating ? Py_True : Py_False);
        if (entry == NULL) {
            Py_DECREF(table);
            return NULL;
        }
        PyTuple_SetItem(table, i, entry);
    }
    return table;
}

int
module_exec(PyObject *module)
{
    return guarded(-1, [&]() -> int {
        ModuleState *state =
            static_cast<ModuleState *>(PyModule_GetState(module));
        struct {
            PyType_Spec *spec;
            PyTypeObject **slot;
        } types[] = {
            {&timing_spec, &state->timing_type},
            {&result_spec, &state->result_type},
            {&client_spec, &state->client_type},
            {&pending_spec, &state->pending_type},
            {&queue_spec, &state->queue_type},
            {&stream_spec, &state->stream_type},
        };
        for (auto &t : types) {
            *t.slot = reinterpret_cast<PyTypeObject *>(
                PyType_FromModuleAndSpec(module, t.spec, NULL));
            if (*t.slot == NULL || PyModule_AddType(module, *t.slot) < 0) {
                return -1;
            }
        }
        for (int code = 0; code < kNumStatusCodes; ++code) {
            PyObject *base = code == 0 ? PyExc_Exception : state->errors[0];
            state->errors[code] = new_error_class(code, base);
            if (state->errors[code] == NULL ||
                PyModule_AddObjectRef(module, kErrorNames[code],
                                      state->errors[code]) < 0) {
                return -1;
            }
        }
        PyObject *dtypes = new_dtype_table();
        if (dtypes == NULL) {
            return -1;
        }
        const int added = PyModule_AddObjectRef(module, "DTYPES", dtypes);
        Py_DECREF(dtypes);
        return added < 0 ? -1 : 0;
    });
}

int
module_traverse(PyObject *module, visitproc visit, void *arg)
{
    ModuleState *state = static_cast<ModuleState *>(PyModule_GetState(module));
    Py_VISIT(state->client_type);
    Py_VISIT(state->result_type);
    Py_VISIT(state->timing_type);
    Py_VISIT(state->pending_type);
    Py_VISIT(state->queue_type);
    Py_VISIT(state->stream_type);
    for (PyObject *error : state->errors) {
        Py_VISIT(error);
    }
    return 0;
}

int
module_clear(PyObject *module)
{
    ModuleState *state = static_cast<ModuleState *>(PyModule_GetState(module));
    Py_CLEAR(state->client_type);
    Py_CLEAR(state->result_type);
    Py_CLEAR(state->timing_type);
    Py_CLEAR(state->pending_type);
    Py_CLEAR(state->queue_type);
    Py_CLEAR(state->stream_type);
    for (PyObject *&error : state->errors) {
        Py_CLEAR(error);
    }
    return 0;
}

void
module_free(void *module)
{
    (void)module_clear(static_cast<PyObject *>(module));
}

/* _raise_status(code, message): raises what a call failing with that gRPC
 * status raises. For tests of the mapping; not part of the API. */
PyObject *
raise_status(PyObject *module, PyObject *args)
{
    return guarded<PyObject *>(NULL, [&]() -> PyObject * {
        int code;
        const char *message;
        Py_ssize_t length;
        if (!PyArg_ParseTuple(args, "is#:_raise_status", &code, &message,
                              &length)) {
            return NULL;
        }
        if (code == 0) {
            PyErr_SetString(PyExc_ValueError,
                            "_raise_status: code 0 (OK) is not an error");
            return NULL;
        }
        ModuleState *state =
            static_cast<ModuleState *>(PyModule_GetState(module));
        /* Out-of-range codes become UNKNOWN, as the C++ client does. */
        absl::StatusCode status_code =
            code < 0 || code >= kNumStatusCodes
                ? absl::StatusCode::kUnknown
                : static_cast<absl::StatusCode>(code);
        return set_status_error(
            state, absl::Status(status_code,
                                absl::string_view(
                                    message, static_cast<size_t>(length))));
    });
}

PyMethodDef module_methods[] = {
    {"_raise_status", raise_status, METH_VARARGS,
     PyDoc_STR("_raise_status(code, message)\n--\n\n"
               "Raise the exception of a call that failed with this gRPC "
               "status (for tests).")},
    {NULL, NULL, 0, NULL},
};

PyModuleDef_Slot module_slots[] = {
    {Py_mod_exec, reinterpret_cast<void *>(module_exec)},
#ifdef Py_mod_multiple_interpreters
    {Py_mod_multiple_interpreters, Py_MOD_PER_INTERPRETER_GIL_SUPPORTED},
#endif
    {0, NULL},
};

}  // namespace

PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "myops_client._core",
    PyDoc_STR("Native core of myops_client: Client (gRPC calls through the "
              "myops C++ client), Result (owns a response's bytes; buffer "
              "protocol), Timing, and the Error hierarchy."),
    sizeof(ModuleState),
    module_methods,
    module_slots,
    module_traverse,
    module_clear,
    module_free,
};

ModuleState *
find_state(PyTypeObject *type)
{
    /* PyType_GetModuleByDef is not in the limited API of 3.11: walk the base
     * classes to the first type defined by this module (a subclass written in
     * Python has no module of its own). */
    PyObject *type_exc, *value_exc, *traceback;
    PyErr_Fetch(&type_exc, &value_exc, &traceback);
    ModuleState *state = NULL;
    for (PyTypeObject *t = type; t != NULL && state == NULL;
         t = static_cast<PyTypeObject *>(PyType_GetSlot(t, Py_tp_base))) {
        if ((PyType_GetFlags(t) & Py_TPFLAGS_HEAPTYPE) == 0) {
            continue;
        }
        PyObject *module = PyType_GetModule(t);
        if (module != NULL && PyModule_GetDef(module) == &module_def) {
            state = static_cast<ModuleState *>(PyModule_GetState(module));
        }
        PyErr_Clear();
    }
    PyErr_Restore(type_exc, value_exc, traceback);
    if (state == NULL) {
        PyErr_SetString(PyExc_TypeError,
                        "myops_client._core: not an instance of its types");
    }
    return state;
}

std::string
type_name(PyObject *value)
{
    PyObject *name = PyType_GetName(Py_TYPE(value));
    Py_ssize_t size = 0;
    const char *text =
        name == NULL ? NULL : PyUnicode_AsUTF8AndSize(name, &size);
    std::string result =
        text == NULL ? "?" : std::string(text, static_cast<size_t>(size));
    Py_XDECREF(name);
    if (text == NULL) {
        PyErr_Clear();
    }
    return result;
}

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

void
drop_client(std::shared_ptr<myops::client::Client> *client)
{
    if (client->use_count() == 1) {
        GilRelease nogil;
        client->reset();
    }
    else {
        client->reset();
    }
}

PyObject *
set_status_error(ModuleState *state, const absl::Status &status)
{
    int code = static_cast<int>(status.code());
    if (code <= 0 || code >= kNumStatusCodes) {
        code = static_cast<int>(absl::StatusCode::kUnknown);
    }
    const std::string code_name =
        absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
    const absl::string_view message = status.message();
    PyObject *cls = state->errors[code];
    PyObject *details = PyUnicode_DecodeUTF8(
        message.data(), static_cast<Py_ssize_t>(message.size()), "replace");
    if (details == NULL) {
        return NULL;
    }
    PyObject *text =
        message.empty()
            ? PyUnicode_FromString(code_name.c_str())
            : PyUnicode_FromFormat("%s: %U", code_name.c_str(), details);
    PyObject *exc =
        text == NULL ? NULL : PyObject_CallFunctionObjArgs(cls, text, NULL);
    Py_XDECREF(text);
    if (exc == NULL) {
        Py_DECREF(details);
        return NULL;
    }
    PyObject *code_obj = PyLong_FromLong(code);
    PyObject *name_obj = PyUnicode_FromString(code_name.c_str());
    if (code_obj == NULL || name_obj == NULL ||
        PyObject_SetAttrString(exc, "code", code_obj) < 0 ||
        PyObject_SetAttrString(exc, "code_name", name_obj) < 0 ||
        PyObject_SetAttrString(exc, "details", details) < 0) {
        Py_XDECREF(code_obj);
        Py_XDECREF(name_obj);
        Py_DECREF(details);
        Py_DECREF(exc);
        return NULL;
    }
    Py_DECREF(code_obj);
    Py_DECREF(name_obj);
    Py_DECREF(details);
    PyErr_SetObject(reinterpret_cast<PyObject *>(Py_TYPE(exc)), exc);
    Py_DECREF(exc);
    return NULL;
}

void
set_cpp_exception_error()
{
    try {
        throw;
    }
    catch (const std::bad_alloc &) {
        PyErr_NoMemory();
    }
    catch (const std::exception &e) {
        PyErr_Format(PyExc_RuntimeError,
                     "myops_client: internal C++ exception: %s", e.what());
    }
    catch (...) {
        PyErr_SetString(
            PyExc_RuntimeError,
            "myops_client: internal C++ exception of unknown type");
    }
}

}  // namespace myops_python

PyMODINIT_FUNC
PyInit__core(void)
{
    return PyModuleDef_Init(&myops_python::module_def);
}
