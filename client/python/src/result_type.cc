/* myops_client._core.Result and myops_client._core.Timing.
 *
 * Result owns the output bytes of one call (the myops::client::Tensor moved
 * out of the response: no copy) and exports them through the buffer
 * protocol, so numpy (np.frombuffer) and memoryview wrap them without a copy.
 * Every export holds a reference to the Result, so a view keeps the bytes
 * alive after the Result itself is deleted; release() frees them early and
 * is refused while views exist. Timing holds the server's timing breakdown
 * in read-only members.
 */
#include "module.h"

#if PY_VERSION_HEX < 0x030C0000
#include <structmember.h>
#define Py_T_LONGLONG T_LONGLONG
#define Py_T_OBJECT_EX T_OBJECT_EX
#define Py_READONLY READONLY
#endif

#include <cstddef>
#include <string>
#include <utility>

#include "myops/client/tensor.h"

namespace myops_python {
namespace {

/* ---- Timing ------------------------------------------------------------ */

struct TimingObject {
    PyObject_HEAD
    long long decode_ns;
    long long queue_ns;
    long long compute_ns;
    long long encode_ns;
    long long total_ns;
    PyObject *device;  /* str */
    PyObject *replica; /* str */
};

void
timing_dealloc(PyObject *op)
{
    TimingObject *self = reinterpret_cast<TimingObject *>(op);
    PyTypeObject *tp = Py_TYPE(op);
    Py_CLEAR(self->device);
    Py_CLEAR(self->replica);
    type_free(tp, op);
    Py_DECREF(tp);
}

PyObject *
timing_repr(PyObject *op)
{
    TimingObject *self = reinterpret_cast<TimingObject *>(op);
    return PyUnicode_FromFormat(
        "Timing(decode_ns=%lld, queue_ns=%lld, compute_ns=%lld, "
        "encode_ns=%lld, total_ns=%lld, device=%R, replica=%R)",
        self->decode_ns, self->queue_ns, self->compute_ns, self->encode_ns,
        self->total_ns, self->device, self->replica);
}

PyMemberDef timing_members[] = {
    {"decode_ns", Py_T_LONGLONG, offsetof(TimingObject, decode_ns),
     Py_READONLY, PyDoc_STR("Validating the request, ns.")},
    {"queue_ns", Py_T_LONGLONG, offsetof(TimingObject, queue_ns), Py_READONLY,
     PyDoc_STR("Waiting for an executor worker, ns.")},
    {"compute_ns", Py_T_LONGLONG, offsetof(TimingObject, compute_ns),
     Py_READONLY,
     PyDoc_STR("Running the operator (on CUDA: copies and kernel), ns.")},
    {"encode_ns", Py_T_LONGLONG, offsetof(TimingObject, encode_ns),
     Py_READONLY, PyDoc_STR("Preparing the response tensor, ns.")},
    {"total_ns", Py_T_LONGLONG, offsetof(TimingObject, total_ns), Py_READONLY,
     PyDoc_STR("Request received to response ready, ns (server side).")},
    {"device", Py_T_OBJECT_EX, offsetof(TimingObject, device), Py_READONLY,
     PyDoc_STR("The device that ran the operator, e.g. 'cpu', 'cuda:0'.")},
    {"replica", Py_T_OBJECT_EX, offsetof(TimingObject, replica), Py_READONLY,
     PyDoc_STR("The server replica that served the call (its --replica-name, "
               "by default its host name); '' when the server sent none.")},
    {NULL, 0, 0, 0, NULL},
};

PyType_Slot timing_slots[] = {
    {Py_tp_doc,
     const_cast<char *>(
         "Where the server spent the time of one request (nanoseconds of "
         "wall time), the device it ran on and the replica that served "
         "it. Read-only.")},
    {Py_tp_dealloc, reinterpret_cast<void *>(timing_dealloc)},
    {Py_tp_repr, reinterpret_cast<void *>(timing_repr)},
    {Py_tp_members, timing_members},
    {0, NULL},
};

}  // namespace

PyObject *
timing_from(ModuleState *state, const myops::client::Timing &timing)
{
    PyTypeObject *type = state->timing_type;
    TimingObject *self = reinterpret_cast<TimingObject *>(type_alloc(type));
    if (self == NULL) {
        return NULL;
    }
    self->decode_ns = timing.decode_ns;
    self->queue_ns = timing.queue_ns;
    self->compute_ns = timing.compute_ns;
    self->encode_ns = timing.encode_ns;
    self->total_ns = timing.total_ns;
    self->device = PyUnicode_DecodeUTF8(
        timing.device.data(), static_cast<Py_ssize_t>(timing.device.size()),
        "replace");
    if (self->device == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    self->replica = PyUnicode_DecodeUTF8(
        timing.replica.data(), static_cast<Py_ssize_t>(timing.replica.size()),
        "replace");
    if (self->replica == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    return reinterpret_cast<PyObject *>(self);
}

namespace {

/* ---- Result ------------------------------------------------------------ */

/* The C++ part of a Result, constructed in place (placement new) by
 * result_from and destroyed by result_dealloc. */
struct ResultData {
    myops::client::Tensor tensor;
    myops::client::Timing timing;
    bool released = false;
};

struct ResultObject {
    PyObject_HEAD
    Py_ssize_t exports; /* live buffer views; bytes fixed while > 0 */
    PyObject *timing;   /* Timing, created on first access; or NULL */
    ResultData data;
};

ResultObject *
as_result(PyObject *op)
{
    return reinterpret_cast<ResultObject *>(op);
}

void
result_dealloc(PyObject *op)
{
    ResultObject *self = as_result(op);
    PyTypeObject *tp = Py_TYPE(op);
    Py_CLEAR(self->timing);
    self->data.~ResultData(); /* noexcept: frees the bytes */
    type_free(tp, op);
    Py_DECREF(tp);
}

int
result_getbuffer(PyObject *op, Py_buffer *view, int flags)
{
    ResultObject *self = as_result(op);
    if (self->data.released) {
        view->obj = NULL;
        PyErr_SetString(PyExc_BufferError,
                        "the Result's bytes were released (release())");
        return -1;
    }
    myops::client::Tensor &tensor = self->data.tensor;
    /* Writable: the bytes belong to this Result alone (its own, or its
     * shared memory region's, which no other call uses while it lives), and
     * the arrays made from it are ordinary writable outputs. */
    if (PyBuffer_FillInfo(view, op, tensor.mutable_data(),
                          static_cast<Py_ssize_t>(tensor.size_bytes()),
                          /*readonly=*/0, flags) < 0) {
        return -1;
    }
    self->exports++;
    return 0;
}

void
result_releasebuffer(PyObject *op, Py_buffer *view)
{
    (void)view;
    as_result(op)->exports--;
}

PyObject *
result_release(PyObject *op, PyObject *Py_UNUSED(ignored))
{
    ResultObject *self = as_result(op);
    if (self->exports > 0) {
        PyErr_Format(PyExc_BufferError,
                     "cannot release the Result's bytes: %zd buffer view(s) "
                     "of them exist (release the views first)",
                     self->exports);
        return NULL;
    }
    return guarded<PyObject *>(NULL, [&]() -> PyObject * {
        /* Freed (or its shared memory region let go) right here. */
        myops::client::Tensor &tensor = self->data.tensor;
        tensor = myops::client::Tensor(tensor.dtype(), tensor.shape(),
                                       std::string());
        self->data.released = true;
        Py_RETURN_NONE;
    });
}

PyObject *
result_get_dtype(PyObject *op, void *Py_UNUSED(closure))
{
    return PyLong_FromLong(
        static_cast<long>(as_result(op)->data.tensor.dtype()));
}

PyObject *
result_get_shape(PyObject *op, void *Py_UNUSED(closure))
{
    const std::vector<int64_t> &shape = as_result(op)->data.tensor.shape();
    PyObject *tuple = PyTuple_New(static_cast<Py_ssize_t>(shape.size()));
    if (tuple == NULL) {
        return NULL;
    }
    for (size_t i = 0; i < shape.size(); ++i) {
        PyObject *dim = PyLong_FromLongLong(shape[i]);
        if (dim == NULL) {
            Py_DECREF(tuple);
            return NULL;
        }
        PyTuple_SetItem(tuple, static_cast<Py_ssize_t>(i), dim);
    }
    return tuple;
}

PyObject *
result_get_nbytes(PyObject *op, void *Py_UNUSED(closure))
{
    return PyLong_FromSize_t(as_result(op)->data.tensor.size_bytes());
}

PyObject *
result_get_timing(PyObject *op, void *Py_UNUSED(closure))
{
    ResultObject *self = as_result(op);
    if (self->timing == NULL) {
        ModuleState *state = find_state(Py_TYPE(op));
        if (state == NULL) {
            return NULL;
        }
        self->timing = timing_from(state, self->data.timing);
        if (self->timing == NULL) {
            return NULL;
        }
    }
    return Py_NewRef(self->timing);
}

PyObject *
result_get_released(PyObject *op, void *Py_UNUSED(closure))
{
    return PyBool_FromLong(as_result(op)->data.released);
}

PyObject *
result_repr(PyObject *op)
{
    ResultObject *self = as_result(op);
    return guarded<PyObject *>(NULL, [&]() -> PyObject * {
        const myops::client::Tensor &tensor = self->data.tensor;
        const std::string dtype(myops::client::DTypeName(tensor.dtype()));
        const std::string shape = myops::client::ShapeToString(tensor.shape());
        return PyUnicode_FromFormat("<%s %s %s, %zu bytes%s>",
                                    type_name(op).c_str(), dtype.c_str(),
                                    shape.c_str(), tensor.size_bytes(),
                                    self->data.released ? ", released" : "");
    });
}

PyMethodDef result_methods[] = {
    {"release", result_release, METH_NOARGS,
     PyDoc_STR("release()\n--\n\n"
               "Free the bytes now. BufferError while buffer views of them "
               "exist.")},
    {NULL, NULL, 0, NULL},
};

PyGetSetDef result_getset[] = {
    {"dtype", result_get_dtype, NULL,
     PyDoc_STR("Wire dtype code (see DTYPES): 1 float32, 2 float64, "
               "3 float16, 4 bfloat16, 5 int8, 6 int16, 7 int32, 8 int64, "
               "9 uint8, 10 bool."),
     NULL},
    {"shape", result_get_shape, NULL, PyDoc_STR("Shape, a tuple of ints."),
     NULL},
    {"nbytes", result_get_nbytes, NULL,
     PyDoc_STR("Size of the bytes (0 after release())."), NULL},
    {"timing", result_get_timing, NULL,
     PyDoc_STR("The server's Timing of the call."), NULL},
    {"released", result_get_released, NULL,
     PyDoc_STR("Whether release() freed the bytes."), NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyType_Slot result_slots[] = {
    {Py_tp_doc, const_cast<char *>(
                    "The output of one call: owns the response's bytes "
                    "(C order, the input's dtype and shape) and exports them "
                    "through the buffer protocol, without copying.")},
    {Py_tp_dealloc, reinterpret_cast<void *>(result_dealloc)},
    {Py_tp_repr, reinterpret_cast<void *>(result_repr)},
    {Py_tp_methods, result_methods},
    {Py_tp_getset, result_getset},
    {Py_bf_getbuffer, reinterpret_cast<void *>(result_getbuffer)},
    {Py_bf_releasebuffer, reinterpret_cast<void *>(result_releasebuffer)},
    {0, NULL},
};

}  // namespace

PyType_Spec timing_spec = {
    "myops_client._core.Timing",
    sizeof(TimingObject),
    0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE |
        Py_TPFLAGS_DISALLOW_INSTANTIATION,
    timing_slots,
};

PyType_Spec result_spec = {
    "myops_client._core.Result",
    sizeof(ResultObject),
    0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE |
        Py_TPFLAGS_DISALLOW_INSTANTIATION,
    result_slots,
};

PyObject *
result_from(ModuleState *state, myops::client::ScaleShiftResult &&result)
{
    PyTypeObject *type = state->result_type;
    ResultObject *self = reinterpret_cast<ResultObject *>(type_alloc(type));
    if (self == NULL) {
        return NULL;
    }
    /* Moves, no allocation: nothing here throws. */
    new (&self->data)
        ResultData{std::move(result.output), std::move(result.timing), false};
    return reinterpret_cast<PyObject *>(self);
}

}  // namespace myops_python
