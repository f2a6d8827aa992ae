// Maps exceptions to absl::Status (see runtime/exception_status.h).
#include "runtime/exception_status.h"

#include <new>
#include <string>

#include <c10/util/Exception.h>

namespace myops::server {
namespace {

std::string Text(const c10::Error& e) { return e.what_without_backtrace(); }

}  // namespace

absl::Status StatusFromException(std::exception_ptr e, bool operator_call) {
  try {
    std::rethrow_exception(e);
  } catch (const CallRefused& refused) {
    return refused.status();
  } catch (const c10::TypeError& err) {
    return absl::InvalidArgumentError(Text(err));
  } catch (const c10::ValueError& err) {
    return absl::InvalidArgumentError(Text(err));
  } catch (const c10::IndexError& err) {
    return absl::InvalidArgumentError(Text(err));
  } catch (const c10::OutOfMemoryError& err) {
    return absl::ResourceExhaustedError(Text(err));
  } catch (const c10::NotImplementedError& err) {
    return absl::UnimplementedError(Text(err));
  } catch (const c10::Error& err) {
    if (operator_call) return absl::InvalidArgumentError(Text(err));
    return absl::InternalError(Text(err));
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError("out of host memory");
  } catch (const std::exception& err) {
    return absl::InternalError(err.what());
  } catch (...) {
    return absl::InternalError("unknown exception");
  }
}

}  // namespace myops::server
