/* Client._call() of myops_client._core: the generic call of any served
 * operator, and the argument and result conversions it shares with
 * _start_call (async_call.cc; the listing, Client.list_operators(), is in
 * server_info.cc).
 *
 * _call takes the arguments in the wire form the Python layer
 * (myops_client/_values.py) makes of them: a list of (name, field, payload)
 * triples, where `field` is the number of the myops.v1.Value field to set
 * and `name` is "" for a positional argument. Tensor payloads are borrowed:
 * their buffers stay exported (and so unchanged in size) until the call
 * returns, and the C++ client copies them into the request once. Outputs
 * come back as (field, payload) pairs, each tensor as a Result that owns its
 * bytes (moved out of the response, no copy).
 */
#include "args.h"
#include "module.h"

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "myops/client/client.h"
#include "myops/client/value.h"

namespace myops_python {
namespace {

/* Fields of myops.v1.Value: the wire-form `field` of _values.py. */
enum Field : long {
    kFieldTensor = 1,
    kFieldInt = 2,
    kFieldFloat = 3,
    kFieldBool = 4,
    kFieldString = 5,
    kFieldIntList = 6,
    kFieldFloatList = 7,
    kFieldTensorList = 8,
    kFieldScalarType = 9,
    kFieldNone = 10,
};

PyObject *
str_of(const std::string &s)
{
    return PyUnicode_FromStringAndSize(s.data(),
                                       static_cast<Py_ssize_t>(s.size()));
}

/* A dtype code of the wire; ValueError for codes the client does not know. */
int
parse_dtype(PyObject *value, mc::DType *out)
{
    long code = PyLong_AsLong(value);
    if (code == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (mc::DTypeItemSize(static_cast<mc::DType>(code)) == 0) {
        PyErr_Format(PyExc_ValueError, "dtype code %ld is not a known dtype",
                     code);
        return -1;
    }
    *out = static_cast<mc::DType>(code);
    return 0;
}

/* A (dtype_code, shape, buffer) triple as a view of the exported buffer. */
int
parse_tensor(PyObject *triple, CallArguments *call, mc::TensorView *view)
{
    PyObject *code, *shape, *data;
    if (!PyTuple_Check(triple) ||
        !PyArg_ParseTuple(triple, "OOO:tensor", &code, &shape, &data)) {
        if (!PyErr_Occurred()) {
            PyErr_Format(PyExc_TypeError,
                         "a tensor is a (dtype_code, shape, buffer) tuple, "
                         "not %.200s",
                         type_name(triple).c_str());
        }
        return -1;
    }
    if (parse_dtype(code, &view->dtype) < 0 ||
        parse_shape(shape, &view->shape) < 0) {
        return -1;
    }
    BufferHolder &buffer = call->buffers.emplace_back();
    if (PyObject_GetBuffer(data, buffer.get(), PyBUF_C_CONTIGUOUS) < 0) {
        return -1;
    }
    view->data = buffer.get()->buf;
    view->size_bytes = static_cast<size_t>(buffer.get()->len);
    return 0;
}

/* The items of a tuple or list payload as a new tuple (a list could change
 * while it is read), or NULL with TypeError naming the field. */
PyObject *
items_of(PyObject *payload, const char *what)
{
    if (PyTuple_Check(payload)) {
        return Py_NewRef(payload);
    }
    if (PyList_Check(payload)) {
        return PyList_AsTuple(payload);
    }
    PyErr_Format(PyExc_TypeError, "%s must be a tuple or list, not %.200s",
                 what, type_name(payload).c_str());
    return NULL;
}

/* One (field, payload) as a C++ value. */
int
parse_value(long field, PyObject *payload, CallArguments *call, mc::Value *out)
{
    switch (field) {
    case kFieldNone:
        *out = mc::Value::None();
        return 0;
    case kFieldTensor: {
        mc::TensorView view;
        if (parse_tensor(payload, call, &view) < 0) {
            return -1;
        }
        *out = mc::Value(view);
        return 0;
    }
    case kFieldInt: {
        long long v = PyLong_AsLongLong(payload);
        if (v == -1 && PyErr_Occurred()) {
            return -1;
        }
        *out = mc::Value::Int(v);
        return 0;
    }
    case kFieldFloat: {
        double v = PyFloat_AsDouble(payload);
        if (v == -1.0 && PyErr_Occurred()) {
            return -1;
        }
        *out = mc::Value::Float(v);
        return 0;
    }
    case kFieldBool: {
        int v = PyObject_IsTrue(payload);
        if (v < 0) {
            return -1;
        }
        *out = mc::Value::Bool(v != 0);
        return 0;
    }
    case kFieldString: {
        std::string text;
        if (parse_str(payload, "a string value", &text) < 0) {
            return -1;
        }
        *out = mc::Value::String(std::move(text));
        return 0;
    }
    case kFieldScalarType: {
        mc::DType dtype;
        if (parse_dtype(payload, &dtype) < 0) {
            return -1;
        }
        *out = mc::Value::ScalarType(dtype);
        return 0;
    }
    case kFieldIntList:
    case kFieldFloatList:
    case kFieldTensorList:
        break;
    default:
        PyErr_Format(PyExc_ValueError,
                     "value field %ld is not one of 1 (tensor) .. 10 (none)",
                     field);
        return -1;
    }
    PyObject *items = items_of(payload, "a list value");
    if (items == NULL) {
        return -1;
    }
    const Py_ssize_t n = PyTuple_Size(items);
    int rc = 0;
    if (field == kFieldIntList) {
        std::vector<int64_t> values(static_cast<size_t>(n));
        for (Py_ssize_t i = 0; i < n && rc == 0; ++i) {
            long long v = PyLong_AsLongLong(PyTuple_GetItem(items, i));
            rc = v == -1 && PyErr_Occurred() ? -1 : 0;
            values[static_cast<size_t>(i)] = v;
        }
        *out = mc::Value::IntList(std::move(values));
    }
    else if (field == kFieldFloatList) {
        std::vector<double> values(static_cast<size_t>(n));
        for (Py_ssize_t i = 0; i < n && rc == 0; ++i) {
            double v = PyFloat_AsDouble(PyTuple_GetItem(items, i));
            rc = v == -1.0 && PyErr_Occurred() ? -1 : 0;
            values[static_cast<size_t>(i)] = v;
        }
        *out = mc::Value::FloatList(std::move(values));
    }
    else {
        std::vector<mc::TensorView> views(static_cast<size_t>(n));
        for (Py_ssize_t i = 0; i < n && rc == 0; ++i) {
            rc = parse_tensor(PyTuple_GetItem(items, i), call,
                              &views[static_cast<size_t>(i)]);
        }
        *out = mc::Value(std::move(views));
    }
    Py_DECREF(items);
    return rc;
}

/* A new Result owning `tensor` (moved). */
PyObject *
result_of(ModuleState *state, mc::Tensor &&tensor, const mc::Timing &timing)
{
    return result_from(state, mc::ScaleShiftResult{std::move(tensor), timing});
}

/* (field, payload) of one output value; tensors are moved out of it. */
PyObject *
output_of(ModuleState *state, mc::Value &value, const mc::Timing &timing)
{
    switch (value.kind()) {
    case mc::Value::Kind::kNone:
        return Py_BuildValue("(lO)", long{kFieldNone}, Py_None);
    case mc::Value::Kind::kTensor:
        return Py_BuildValue("(lN)", long{kFieldTensor},
                             result_of(state, value.TakeTensor(), timing));
    case mc::Value::Kind::kInt:
        return Py_BuildValue("(lL)", long{kFieldInt},
                             static_cast<long long>(value.int_value()));
    case mc::Value::Kind::kFloat:
        return Py_BuildValue("(ld)", long{kFieldFloat}, value.float_value());
    case mc::Value::Kind::kBool:
        return Py_BuildValue("(lN)", long{kFieldBool},
                             PyBool_FromLong(value.bool_value()));
    case mc::Value::Kind::kString:
        return Py_BuildValue("(lN)", long{kFieldString},
                             str_of(value.string_value()));
    case mc::Value::Kind::kScalarType:
        return Py_BuildValue("(ll)", long{kFieldScalarType},
                             static_cast<long>(value.scalar_type()));
    case mc::Value::Kind::kIntList:
    case mc::Value::Kind::kFloatList:
    case mc::Value::Kind::kTensorList:
        break;
    }
    PyObject *items;
    long field;
    if (value.kind() == mc::Value::Kind::kIntList) {
        field = kFieldIntList;
        const std::vector<int64_t> &values = value.int_list();
        items = PyTuple_New(static_cast<Py_ssize_t>(values.size()));
        for (size_t i = 0; items != NULL && i < values.size(); ++i) {
            PyObject *v = PyLong_FromLongLong(values[i]);
            if (v == NULL) {
                Py_CLEAR(items);
                break;
            }
            PyTuple_SetItem(items, static_cast<Py_ssize_t>(i), v);
        }
    }
    else if (value.kind() == mc::Value::Kind::kFloatList) {
        field = kFieldFloatList;
        const std::vector<double> &values = value.float_list();
        items = PyTuple_New(static_cast<Py_ssize_t>(values.size()));
        for (size_t i = 0; items != NULL && i < values.size(); ++i) {
            PyObject *v = PyFloat_FromDouble(values[i]);
            if (v == NULL) {
                Py_CLEAR(items);
                break;
            }
            PyTuple_SetItem(items, static_cast<Py_ssize_t>(i), v);
        }
    }
    else {
        field = kFieldTensorList;
        std::vector<mc::Tensor> tensors = value.TakeTensorList();
        items = PyList_New(static_cast<Py_ssize_t>(tensors.size()));
        for (size_t i = 0; items != NULL && i < tensors.size(); ++i) {
            PyObject *r = result_of(state, std::move(tensors[i]), timing);
            if (r == NULL) {
                Py_CLEAR(items);
                break;
            }
            PyList_SetItem(items, static_cast<Py_ssize_t>(i), r);
        }
    }
    return items == NULL ? NULL : Py_BuildValue("(lN)", field, items);
}

}  // namespace

int
parse_str(PyObject *value, const char *what, std::string *out)
{
    if (!PyUnicode_Check(value)) {
        PyErr_Format(PyExc_TypeError, "%s must be a str, not %.200s", what,
                     type_name(value).c_str());
        return -1;
    }
    Py_ssize_t size;
    const char *text = PyUnicode_AsUTF8AndSize(value, &size);
    if (text == NULL) {
        return -1;
    }
    out->assign(text, static_cast<size_t>(size));
    return 0;
}

/* The arguments list of _call: (name, field, payload) triples, positional
 * ones ("" names) first. */
int
parse_call_arguments(PyObject *arguments, CallArguments *call)
{
    PyObject *items = items_of(arguments, "arguments");
    if (items == NULL) {
        return -1;
    }
    int rc = 0;
    const Py_ssize_t n = PyTuple_Size(items);
    for (Py_ssize_t i = 0; i < n && rc == 0; ++i) {
        PyObject *item = PyTuple_GetItem(items, i);
        PyObject *name_obj, *payload;
        long field;
        if (!PyTuple_Check(item) ||
            !PyArg_ParseTuple(item, "UlO:argument", &name_obj, &field,
                              &payload)) {
            if (!PyErr_Occurred()) {
                PyErr_Format(PyExc_TypeError,
                             "arguments[%zd] must be a (name, field, payload) "
                             "tuple, not %.200s",
                             i, type_name(item).c_str());
            }
            rc = -1;
            break;
        }
        std::string name;
        mc::Value value;
        rc = parse_str(name_obj, "an argument's name", &name) < 0 ||
                     parse_value(field, payload, call, &value) < 0
                 ? -1
                 : 0;
        if (rc < 0) {
            break;
        }
        if (name.empty()) {
            if (!call->kwargs.empty()) {
                PyErr_Format(PyExc_ValueError,
                             "arguments[%zd]: a positional argument after "
                             "keyword arguments",
                             i);
                rc = -1;
                break;
            }
            call->args.push_back(std::move(value));
        }
        else {
            call->kwargs.push_back(
                mc::NamedArg{std::move(name), std::move(value)});
        }
    }
    Py_DECREF(items);
    return rc;
}

PyObject *
call_result_of(ModuleState *state, mc::CallResult &&result)
{
    PyObject *outputs =
        PyList_New(static_cast<Py_ssize_t>(result.outputs.size()));
    for (size_t i = 0; outputs != NULL && i < result.outputs.size(); ++i) {
        PyObject *item = output_of(state, result.outputs[i], result.timing);
        if (item == NULL) {
            Py_CLEAR(outputs);
            break;
        }
        PyList_SetItem(outputs, static_cast<Py_ssize_t>(i), item);
    }
    if (outputs == NULL) {
        return NULL;
    }
    return Py_BuildValue("(NN)", outputs, timing_from(state, result.timing));
}

PyObject *
client_call(PyObject *op, PyObject *const *args, Py_ssize_t nargs,
            PyObject *kwnames)
{
    return guarded<PyObject *>(NULL, [&]() -> PyObject * {
        if ((kwnames != NULL && PyTuple_Size(kwnames) > 0) || nargs < 2 ||
            nargs > 4) {
            PyErr_Format(PyExc_TypeError,
                         "_call() takes 2 to 4 positional arguments (op, "
                         "arguments[, device[, timeout]]), got %zd "
                         "positional and %zd keyword",
                         nargs, kwnames == NULL ? 0 : PyTuple_Size(kwnames));
            return NULL;
        }
        std::string name;
        if (parse_str(args[0], "op", &name) < 0) {
            return NULL;
        }
        /* Declared before the call so that the buffers it borrows are
         * released after it, with the GIL held. */
        CallArguments arguments;
        if (parse_call_arguments(args[1], &arguments) < 0) {
            return NULL;
        }
        mc::CallOptions call;
        std::shared_ptr<mc::Client> client;
        if (client_call_setup(op, nargs > 3 ? args[3] : NULL,
                              nargs > 2 ? args[2] : NULL, &call,
                              &client) < 0) {
            return NULL;
        }
        absl::StatusOr<mc::CallResult> result;
        {
            GilRelease nogil;
            result =
                client->Call(name, arguments.args, arguments.kwargs, call);
            client.reset();
        }
        ModuleState *state = find_state(Py_TYPE(op));
        if (state == NULL) {
            return NULL;
        }
        if (!result.ok()) {
            return set_status_error(state, result.status());
        }
        return call_result_of(state, *std::move(result));
    });
}

}  // namespace myops_python
