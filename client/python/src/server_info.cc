/* myops_client._core.Client.server_info()'s result: the server's versions,
 * devices, operators, limits and workers as a dict of plain Python values. */
#include "module.h"

#include <string>

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

}  // namespace myops_python
