/* Client.__init__'s arguments as ClientOptions: every option's parsing and
 * range check, each error naming its argument (split from client_type.cc,
 * which owns the object). */
#include "args.h"

#include <memory>
#include <string>

namespace myops_python {

int
parse_client_init(PyObject *args, PyObject *kwds, mc::ClientOptions *options,
                  PyObject **target, double *timeout)
{
    static const char *kwlist[] = {"target",
                                   "timeout",
                                   "max_message_bytes",
                                   "retries",
                                   "retry_backoff",
                                   "max_retry_backoff",
                                   "root_certificates",
                                   "private_key",
                                   "certificate_chain",
                                   "channel_args",
                                   "token",
                                   "load_balancing",
                                   "health_checking",
                                   "shared_memory",
                                   NULL};
    PyObject *timeout_obj = NULL, *root = NULL;
    PyObject *key = NULL, *chain = NULL, *channel_args = NULL;
    PyObject *max_message_bytes_obj = NULL, *retries_obj = NULL;
    PyObject *token = NULL, *load_balancing = NULL;
    PyObject *health_checking = NULL, *shared_memory = NULL;
    long long max_message_bytes = 1LL << 30;
    long long retries = 2;
    double retry_backoff = 0.1, max_retry_backoff = 2.0;
    if (!PyArg_ParseTupleAndKeywords(
            args, kwds, "U|$OOOddOOOOOOOO:Client", const_cast<char **>(kwlist),
            target, &timeout_obj, &max_message_bytes_obj, &retries_obj,
            &retry_backoff, &max_retry_backoff, &root, &key, &chain,
            &channel_args, &token, &load_balancing, &health_checking,
            &shared_memory)) {
        return -1;
    }
    if (timeout_obj != NULL &&
        parse_timeout(timeout_obj, "timeout", timeout) < 0) {
        return -1;
    }
    if (max_message_bytes_obj != NULL &&
        parse_int_in_range(max_message_bytes_obj, "max_message_bytes", 1,
                           kMaxMessageBytes, &max_message_bytes) < 0) {
        return -1;
    }
    /* retries + 1 attempts, at most the C++ client's limit. */
    if (retries_obj != NULL &&
        parse_int_in_range(retries_obj, "retries (0: no retries)", 0,
                           mc::kMaxAttempts - 1, &retries) < 0) {
        return -1;
    }
    Py_ssize_t target_size;
    const char *target_text = PyUnicode_AsUTF8AndSize(*target, &target_size);
    if (target_text == NULL) {
        return -1;
    }
    options->target.assign(target_text, static_cast<size_t>(target_size));
    options->default_deadline = to_millis(*timeout);
    options->max_message_bytes = static_cast<int>(max_message_bytes);
    options->retry.max_attempts = static_cast<int>(retries) + 1;
    if (parse_backoff(retry_backoff, "retry_backoff",
                      &options->retry.initial_backoff) < 0 ||
        parse_backoff(max_retry_backoff, "max_retry_backoff",
                      &options->retry.max_backoff) < 0) {
        return -1;
    }
    if (options->retry.max_backoff < options->retry.initial_backoff) {
        PyErr_Format(PyExc_ValueError,
                     "max_retry_backoff (%s s) must be >= retry_backoff "
                     "(%s s)",
                     float_repr(max_retry_backoff).c_str(),
                     float_repr(retry_backoff).c_str());
        return -1;
    }
    if (parse_pem(root, "root_certificates", &options->tls.root_ca_pem) < 0 ||
        parse_pem(key, "private_key", &options->tls.client_key_pem) < 0 ||
        parse_pem(chain, "certificate_chain", &options->tls.client_cert_pem) <
            0 ||
        parse_channel_args(channel_args, options) < 0 ||
        parse_token(token, &options->auth_token) < 0 ||
        parse_load_balancing(load_balancing, &options->load_balancing) < 0 ||
        parse_bool(health_checking, "health_checking",
                   &options->health_checking) < 0 ||
        parse_shared_memory(shared_memory, &options->shared_memory) < 0) {
        return -1;
    }
    return 0;
}

}  // namespace myops_python
