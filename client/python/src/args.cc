/* Argument parsing for the Client type (see args.h). */
#include "args.h"

#include <cmath>
#include <limits>
#include <optional>

#include "myops/common/dtype.h"

namespace myops_python {

/* Seconds from a timeout argument: an int or float (not bool), finite and
 * > 0. TypeError / ValueError naming `what` otherwise. */
int
parse_timeout(PyObject *value, const char *what, double *seconds)
{
    if (PyBool_Check(value) ||
        !(PyFloat_Check(value) || PyLong_Check(value))) {
        PyErr_Format(
            PyExc_TypeError,
            "%s must be a number of seconds (int or float), not %.200s", what,
            type_name(value).c_str());
        return -1;
    }
    double v = PyFloat_AsDouble(value);
    if (v == -1.0 && PyErr_Occurred()) {
        return -1;
    }
    if (!(v > 0.0) || !(v <= kMaxTimeout)) {
        PyErr_Format(PyExc_ValueError,
                     "%s must be > 0 and at most %d seconds, got %R", what,
                     static_cast<int>(kMaxTimeout), value);
        return -1;
    }
    *seconds = v;
    return 0;
}

/* An int (not bool) in [lo, hi]. TypeError / ValueError naming `what` and
 * the range otherwise (also for ints beyond long long). */
int
parse_int_in_range(PyObject *value, const char *what, long long lo,
                   long long hi, long long *out)
{
    if (PyBool_Check(value) || !PyLong_Check(value)) {
        PyErr_Format(PyExc_TypeError, "%s must be an int, not %.200s", what,
                     type_name(value).c_str());
        return -1;
    }
    int overflow;
    const long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (v == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (overflow != 0 || v < lo || v > hi) {
        PyErr_Format(PyExc_ValueError, "%s must be in [%lld, %lld], got %R",
                     what, lo, hi, value);
        return -1;
    }
    *out = v;
    return 0;
}

/* A deadline of `seconds` as whole milliseconds, at least 1. */
std::chrono::milliseconds
to_millis(double seconds)
{
    return std::chrono::milliseconds(
        std::max<int64_t>(1, static_cast<int64_t>(std::ceil(seconds * 1e3))));
}

/* repr() of a double, for messages. */
std::string
float_repr(double value)
{
    char *text = PyOS_double_to_string(value, 'r', 0, Py_DTSF_ADD_DOT_0, NULL);
    if (text == NULL) {
        PyErr_Clear();
        return "?";
    }
    std::string out(text);
    PyMem_Free(text);
    return out;
}

/* Non-negative finite seconds (a backoff) as milliseconds. */
int
parse_backoff(double seconds, const char *what, std::chrono::milliseconds *out)
{
    if (!(seconds >= 0.0) || !(seconds <= kMaxTimeout)) {
        PyErr_Format(
            PyExc_ValueError, "%s must be >= 0 and at most %d seconds, got %s",
            what, static_cast<int>(kMaxTimeout), float_repr(seconds).c_str());
        return -1;
    }
    *out = std::chrono::milliseconds(
        static_cast<int64_t>(std::llround(seconds * 1e3)));
    return 0;
}

/* Optional PEM text: None, str or bytes. */
int
parse_pem(PyObject *value, const char *what, std::string *out)
{
    if (value == NULL || value == Py_None) {
        return 0;
    }
    const char *data;
    Py_ssize_t size;
    if (PyUnicode_Check(value)) {
        data = PyUnicode_AsUTF8AndSize(value, &size);
        if (data == NULL) {
            return -1;
        }
    }
    else if (PyBytes_Check(value)) {
        data = PyBytes_AsString(value);
        size = PyBytes_Size(value);
    }
    else {
        PyErr_Format(PyExc_TypeError,
                     "%s must be PEM text (str or bytes) or None, not %.200s",
                     what, type_name(value).c_str());
        return -1;
    }
    out->assign(data, static_cast<size_t>(size));
    return 0;
}

/* Optional bearer token: None or a str of visible ASCII. */
int
parse_bool(PyObject *value, const char *what, bool *out)
{
    if (value == NULL) {
        return 0;
    }
    if (!PyBool_Check(value)) {
        PyErr_Format(PyExc_TypeError, "%s must be a bool, not %.200s", what,
                     type_name(value).c_str());
        return -1;
    }
    *out = value == Py_True;
    return 0;
}

int
parse_load_balancing(PyObject *value, mc::LoadBalancing *out)
{
    if (value == NULL || value == Py_None) {
        return 0;
    }
    if (!PyUnicode_Check(value)) {
        PyErr_Format(PyExc_TypeError,
                     "load_balancing must be a str, not %.200s",
                     type_name(value).c_str());
        return -1;
    }
    if (PyUnicode_CompareWithASCIIString(value, "round_robin") == 0) {
        *out = mc::LoadBalancing::kRoundRobin;
        return 0;
    }
    if (PyUnicode_CompareWithASCIIString(value, "pick_first") == 0) {
        *out = mc::LoadBalancing::kPickFirst;
        return 0;
    }
    PyErr_Format(
        PyExc_ValueError,
        "load_balancing is %R; expected 'round_robin' or 'pick_first'", value);
    return -1;
}

int
parse_shared_memory(PyObject *value, mc::SharedMemoryMode *out)
{
    if (value == NULL || value == Py_None) {
        return 0;
    }
    if (!PyUnicode_Check(value)) {
        PyErr_Format(PyExc_TypeError,
                     "shared_memory must be a str, not %.200s",
                     type_name(value).c_str());
        return -1;
    }
    static const struct {
        const char *name;
        mc::SharedMemoryMode mode;
    } kModes[] = {{"auto", mc::SharedMemoryMode::kAuto},
                  {"on", mc::SharedMemoryMode::kOn},
                  {"off", mc::SharedMemoryMode::kOff}};
    for (const auto &m : kModes) {
        if (PyUnicode_CompareWithASCIIString(value, m.name) == 0) {
            *out = m.mode;
            return 0;
        }
    }
    PyErr_Format(PyExc_ValueError,
                 "shared_memory is %R; expected 'auto', 'on' or 'off'", value);
    return -1;
}

int
parse_token(PyObject *value, std::string *out)
{
    if (value == NULL || value == Py_None) {
        return 0;
    }
    if (!PyUnicode_Check(value)) {
        PyErr_Format(PyExc_TypeError,
                     "token must be a str or None, not %.200s",
                     type_name(value).c_str());
        return -1;
    }
    Py_ssize_t size;
    const char *text = PyUnicode_AsUTF8AndSize(value, &size);
    if (text == NULL) {
        return -1;
    }
    for (Py_ssize_t i = 0; i < size; ++i) {
        const unsigned char c = static_cast<unsigned char>(text[i]);
        if (c < 0x21 || c > 0x7e) { /* never echo the token */
            PyErr_Format(PyExc_ValueError,
                         "token must be visible ASCII (characters 0x21 to "
                         "0x7e); byte %zd of its UTF-8 is 0x%02x",
                         i, static_cast<unsigned int>(c));
            return -1;
        }
    }
    out->assign(text, static_cast<size_t>(size));
    return 0;
}

/* channel_args: a dict of gRPC channel argument names to int or str. */
int
parse_channel_args(PyObject *value, mc::ClientOptions *options)
{
    if (value == NULL || value == Py_None) {
        return 0;
    }
    if (!PyDict_Check(value)) {
        PyErr_Format(
            PyExc_TypeError,
            "channel_args must be a dict of str to int or str, not %.200s",
            type_name(value).c_str());
        return -1;
    }
    PyObject *key, *item;
    Py_ssize_t pos = 0;
    while (PyDict_Next(value, &pos, &key, &item)) {
        if (!PyUnicode_Check(key)) {
            PyErr_Format(PyExc_TypeError,
                         "channel_args keys must be str, not %.200s",
                         type_name(key).c_str());
            return -1;
        }
        const char *name = PyUnicode_AsUTF8AndSize(key, NULL);
        if (name == NULL) {
            return -1;
        }
        if (PyLong_Check(item) && !PyBool_Check(item)) {
            int overflow;
            long v = PyLong_AsLongAndOverflow(item, &overflow);
            if (v == -1 && PyErr_Occurred()) {
                return -1;
            }
            if (overflow || v < INT32_MIN || v > INT32_MAX) {
                PyErr_Format(PyExc_ValueError,
                             "channel_args[%R] = %R does not fit in a C int",
                             key, item);
                return -1;
            }
            options->int_channel_args[name] = static_cast<int>(v);
        }
        else if (PyUnicode_Check(item)) {
            const char *text = PyUnicode_AsUTF8AndSize(item, NULL);
            if (text == NULL) {
                return -1;
            }
            options->string_channel_args[name] = text;
        }
        else {
            PyErr_Format(PyExc_TypeError,
                         "channel_args[%R] must be int or str, not %.200s",
                         key, type_name(item).c_str());
            return -1;
        }
    }
    return 0;
}

/* Dims of a shape argument (a tuple, or a list, of ints >= 0). */
int
parse_shape(PyObject *value, std::vector<int64_t> *shape)
{
    PyObject *tuple;
    if (PyTuple_Check(value)) {
        tuple = Py_NewRef(value);
    }
    else if (PyList_Check(value)) {
        tuple = PyList_AsTuple(value); /* a list could change under us */
        if (tuple == NULL) {
            return -1;
        }
    }
    else {
        PyErr_Format(PyExc_TypeError,
                     "shape must be a tuple of ints, not %.200s",
                     type_name(value).c_str());
        return -1;
    }
    const Py_ssize_t n = PyTuple_Size(tuple);
    shape->resize(static_cast<size_t>(n));
    for (Py_ssize_t i = 0; i < n; ++i) {
        long long dim = PyLong_AsLongLong(PyTuple_GetItem(tuple, i));
        if (dim == -1 && PyErr_Occurred()) {
            Py_DECREF(tuple);
            return -1;
        }
        if (dim < 0) {
            PyErr_Format(PyExc_ValueError,
                         "shape[%zd] is %lld; expected dims >= 0", i, dim);
            Py_DECREF(tuple);
            return -1;
        }
        (*shape)[static_cast<size_t>(i)] = dim;
    }
    Py_DECREF(tuple);
    return 0;
}

int
parse_scale_shift_args(PyObject *const *args, ScaleShiftArgs *out)
{
    long dtype = PyLong_AsLong(args[0]);
    if (dtype == -1 && PyErr_Occurred()) {
        return -1;
    }
    const std::optional<mc::DType> known = myops::DTypeFromWire(dtype);
    if (!known) {
        PyErr_Format(PyExc_ValueError,
                     "dtype code %ld is not a code of DTYPES (1 to %d: %s)",
                     dtype, myops::kNumDTypes, myops::DTypeNameList().c_str());
        return -1;
    }
    out->view.dtype = *known;
    if (parse_shape(args[1], &out->view.shape) < 0 ||
        PyObject_GetBuffer(args[2], out->buffer.get(), PyBUF_C_CONTIGUOUS) <
            0) {
        return -1;
    }
    out->view.data = out->buffer.get()->buf;
    out->view.size_bytes = static_cast<size_t>(out->buffer.get()->len);
    out->alpha = PyFloat_AsDouble(args[3]);
    if (out->alpha == -1.0 && PyErr_Occurred()) {
        return -1;
    }
    out->beta = PyFloat_AsDouble(args[4]);
    if (out->beta == -1.0 && PyErr_Occurred()) {
        return -1;
    }
    return 0;
}

}  // namespace myops_python
