/* The server's descriptions as plain Python values: Client.server_info()'s
 * dict (versions, devices, operators, limits, workers) and
 * Client.list_operators()'s list of operator dicts (as myops.v1.OperatorInfo:
 * schemas, argument kinds, devices, served or why not). */
#include "args.h"
#include "module.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "myops/client/client.h"

namespace myops_python {
namespace {

PyObject *
str_of(const std::string &s)
{
    return PyUnicode_FromStringAndSize(s.data(),
                                       static_cast<Py_ssize_t>(s.size()));
}

/* Appends `item` (a new reference, or NULL after an error) to `list`;
 * -1 with an exception set on failure. Consumes `item`. */
int
append_new(PyObject *list, PyObject *item)
{
    if (item == NULL) {
        return -1;
    }
    const int rc = PyList_Append(list, item);
    Py_DECREF(item);
    return rc;
}

/* The Python name of a schema kind: myops.v1.ValueKind's, lower case. */
const char *
kind_name(mc::SchemaKind kind)
{
    switch (kind) {
    case mc::SchemaKind::kTensor:
        return "tensor";
    case mc::SchemaKind::kInt:
        return "int";
    case mc::SchemaKind::kFloat:
        return "float";
    case mc::SchemaKind::kBool:
        return "bool";
    case mc::SchemaKind::kString:
        return "string";
    case mc::SchemaKind::kIntList:
        return "int_list";
    case mc::SchemaKind::kFloatList:
        return "float_list";
    case mc::SchemaKind::kTensorList:
        return "tensor_list";
    case mc::SchemaKind::kScalar:
        return "scalar";
    case mc::SchemaKind::kScalarType:
        return "scalar_type";
    default:
        return "other";
    }
}

/* The dict of one OperatorDescription (keys as OperatorInfo's fields). */
PyObject *
operator_dict(const mc::OperatorDescription &op)
{
    PyObject *arguments = PyList_New(0);
    PyObject *returns = PyList_New(0);
    PyObject *devices = PyList_New(0);
    if (arguments == NULL || returns == NULL || devices == NULL) {
        goto error;
    }
    for (const mc::ArgumentDescription &a : op.arguments) {
        if (append_new(
                arguments,
                Py_BuildValue(
                    "{s:N,s:N,s:s,s:O,s:O,s:N,s:O}", "name", str_of(a.name),
                    "type", str_of(a.type), "kind", kind_name(a.kind),
                    "optional", a.optional ? Py_True : Py_False, "has_default",
                    a.has_default ? Py_True : Py_False, "default_value",
                    str_of(a.default_value), "kwarg_only",
                    a.kwarg_only ? Py_True : Py_False)) < 0) {
            goto error;
        }
    }
    for (const mc::ReturnDescription &r : op.returns) {
        if (append_new(returns,
                       Py_BuildValue("{s:N,s:N,s:s}", "name", str_of(r.name),
                                     "type", str_of(r.type), "kind",
                                     kind_name(r.kind))) < 0) {
            goto error;
        }
    }
    for (const std::string &d : op.devices) {
        if (append_new(devices, str_of(d)) < 0) {
            goto error;
        }
    }
    /* "N" steals the lists' references, also on failure. */
    return Py_BuildValue(
        "{s:N,s:N,s:N,s:N,s:N,s:N,s:O,s:N}", "name", str_of(op.name),
        "overload", str_of(op.overload), "schema", str_of(op.schema),
        "arguments", arguments, "returns", returns, "devices", devices,
        "served", op.served ? Py_True : Py_False, "reason", str_of(op.reason));

error:
    Py_XDECREF(arguments);
    Py_XDECREF(returns);
    Py_XDECREF(devices);
    return NULL;
}

}  // namespace

PyObject *
server_info_dict(const myops::client::ServerInfo &info)
{
    PyObject *devices = PyList_New(0);
    PyObject *operators = PyList_New(0);
    if (devices == NULL || operators == NULL) {
        goto error;
    }
    for (const myops::client::DeviceInfo &d : info.devices) {
        if (append_new(
                devices,
                Py_BuildValue(
                    "{s:N,s:N,s:L}", "name", str_of(d.name), "description",
                    str_of(d.description), "total_memory_bytes",
                    static_cast<long long>(d.total_memory_bytes))) < 0) {
            goto error;
        }
    }
    for (const myops::client::OperatorInfo &o : info.operators) {
        if (append_new(operators,
                       Py_BuildValue("{s:N,s:N}", "name", str_of(o.name),
                                     "schema", str_of(o.schema))) < 0) {
            goto error;
        }
    }
    /* "N" steals the lists' references, also on failure. */
    return Py_BuildValue(
        "{s:N,s:N,s:N,s:N,s:N,s:{s:L,s:L,s:L},s:i}", "myops_version",
        str_of(info.myops_version), "torch_version",
        str_of(info.torch_version), "cuda_version", str_of(info.cuda_version),
        "devices", devices, "operators", operators, "limits",
        "max_message_bytes",
        static_cast<long long>(info.limits.max_message_bytes), "max_elements",
        static_cast<long long>(info.limits.max_elements), "max_inflight",
        static_cast<long long>(info.limits.max_inflight), "workers",
        static_cast<int>(info.workers));

error:
    Py_XDECREF(devices);
    Py_XDECREF(operators);
    return NULL;
}

PyObject *
client_list_operators(PyObject *op, PyObject *args, PyObject *kwds)
{
    return guarded<PyObject *>(NULL, [&]() -> PyObject * {
        static const char *kwlist[] = {"timeout", NULL};
        PyObject *timeout = NULL;
        if (!PyArg_ParseTupleAndKeywords(args, kwds, "|$O:list_operators",
                                         const_cast<char **>(kwlist),
                                         &timeout)) {
            return NULL;
        }
        mc::CallOptions call;
        std::shared_ptr<mc::Client> client;
        if (client_call_setup(op, timeout, NULL, &call, &client) < 0) {
            return NULL;
        }
        absl::StatusOr<std::vector<mc::OperatorDescription>> listing;
        {
            GilRelease nogil;
            listing = client->ListOperators(call);
            client.reset();
        }
        ModuleState *state = find_state(Py_TYPE(op));
        if (state == NULL) {
            return NULL;
        }
        if (!listing.ok()) {
            return set_status_error(state, listing.status());
        }
        return operators_list(*listing);
    });
}

PyObject *
operators_list(const std::vector<mc::OperatorDescription> &listing)
{
    PyObject *list = PyList_New(0);
    for (size_t i = 0; list != NULL && i < listing.size(); ++i) {
        if (append_new(list, operator_dict(listing[i])) < 0) {
            Py_CLEAR(list);
        }
    }
    return list;
}

}  // namespace myops_python
