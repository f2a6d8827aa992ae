/* Argument parsing shared by the Client type: timeouts, backoffs, PEM data,
 * channel arguments and shapes, each with a TypeError/ValueError naming the
 * argument, and a scoped Py_buffer. All need the GIL.
 */
#ifndef MYOPS_PYTHON_ARGS_H_
#define MYOPS_PYTHON_ARGS_H_

#include "module.h"

#include <chrono>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "myops/client/options.h"
#include "myops/client/results.h"
#include "myops/client/value.h"

namespace myops_python {

namespace mc = ::myops::client;

constexpr double kMaxTimeout = 1e9;                /* seconds; ~31 years */
constexpr double kDefaultTimeout = 30.0;           /* seconds */
constexpr long long kMaxMessageBytes = 2147483647; /* gRPC's limit */

/* Client.__init__(target, *, timeout, max_message_bytes, retries, ...): fills
 * `options`, `*target` (borrowed str) and `*timeout` (left as given when the
 * argument is absent). -1 with TypeError/ValueError naming the argument. */
int parse_client_init(PyObject *args, PyObject *kwds,
                      mc::ClientOptions *options, PyObject **target,
                      double *timeout);

/* Seconds from a timeout argument: an int or float (not bool), finite and
 * > 0. TypeError / ValueError naming `what` otherwise. */
int parse_timeout(PyObject *value, const char *what, double *seconds);

/* An int (not bool) in [lo, hi]. TypeError / ValueError naming `what` and
 * the range otherwise. */
int parse_int_in_range(PyObject *value, const char *what, long long lo,
                       long long hi, long long *out);

/* A deadline of `seconds` as whole milliseconds, at least 1. */
std::chrono::milliseconds to_millis(double seconds);

/* repr() of a double, for messages. */
std::string float_repr(double value);

/* Non-negative finite seconds (a backoff) as milliseconds. */
int parse_backoff(double seconds, const char *what,
                  std::chrono::milliseconds *out);

/* Optional PEM text: None, str or bytes. */
int parse_pem(PyObject *value, const char *what, std::string *out);

/* Optional bearer token: None or a str of visible ASCII. */
int parse_token(PyObject *value, std::string *out);

/* channel_args: a dict of gRPC channel argument names to int or str. */
int parse_channel_args(PyObject *value, mc::ClientOptions *options);

/* An optional flag: NULL (absent) leaves *out; else True or False only. */
int parse_bool(PyObject *value, const char *what, bool *out);

/* load_balancing: None, "round_robin" or "pick_first". */
int parse_load_balancing(PyObject *value, mc::LoadBalancing *out);

/* shared_memory: None, "auto", "on" or "off". */
int parse_shared_memory(PyObject *value, mc::SharedMemoryMode *out);

/* Dims of a shape argument (a tuple, or a list, of ints >= 0). */
int parse_shape(PyObject *value, std::vector<int64_t> *shape);

/* A Py_buffer released (with the GIL held) when it goes out of scope. */
class BufferHolder {
public:
    BufferHolder()
    {
        view_.obj = NULL;
    }
    ~BufferHolder()
    {
        if (view_.obj != NULL) {
            PyBuffer_Release(&view_);
        }
    }
    BufferHolder(const BufferHolder &) = delete;
    BufferHolder &operator=(const BufferHolder &) = delete;
    Py_buffer *get()
    {
        return &view_;
    }

private:
    Py_buffer view_;
};

/* The tensor and scalars of a scale_shift call: x as a view of the buffer it
 * borrows (released, GIL held, with this object), alpha and beta. */
struct ScaleShiftArgs {
    BufferHolder buffer;
    mc::TensorView view;
    double alpha = 0.0;
    double beta = 0.0;
};

/* (dtype, shape, data, alpha, beta): a dtype code of DTYPES, a shape, a
 * C-contiguous buffer and two numbers, as _scale_shift and
 * _start_scale_shift take them. -1 with TypeError/ValueError otherwise. */
int parse_scale_shift_args(PyObject *const *args, ScaleShiftArgs *out);

/* Arguments of one generic call: the C++ values and the buffers they borrow.
 * The buffers are released (GIL held) when this is destroyed. */
struct CallArguments {
    std::deque<BufferHolder> buffers;
    std::vector<mc::Value> args;
    std::vector<mc::NamedArg> kwargs;
};

/* The arguments list of _call and _start_call: (name, field, payload)
 * triples, positional ones ("" names) first (call.cc). -1 with
 * TypeError/ValueError naming the argument otherwise. */
int parse_call_arguments(PyObject *arguments, CallArguments *call);

/* A str argument as UTF-8 into *out: 0, or -1 with TypeError naming `what`
 * for other types (call.cc). */
int parse_str(PyObject *value, const char *what, std::string *out);

/* _call's (outputs, timing) of `result`, its tensors moved out as Results
 * (call.cc). */
PyObject *call_result_of(ModuleState *state, mc::CallResult &&result);

}  // namespace myops_python

#endif  // MYOPS_PYTHON_ARGS_H_
