// The REST binding of the system shared memory extension (see frontends/oip/rest/shm.h).
#include "frontends/oip/rest/shm.h"

#include <nlohmann/json.hpp>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "frontends/oip/shm.h"

namespace myops::server::kserve {
namespace {

using Json = nlohmann::json;

absl::Status Register(const OwnedRegions& shm, const std::string& name, absl::string_view body) {
  Json j = Json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  const std::string where = absl::StrCat("the registration of shared memory region '", name, "'");
  if (!j.is_object()) return absl::InvalidArgumentError(where + " is not a JSON object");
  const auto key = j.find("key");
  if (key == j.end() || !key->is_string()) {
    return absl::InvalidArgumentError(where + " has no string 'key'");
  }
  uint64_t numbers[2] = {0, 0};
  const char* names[2] = {"offset", "byte_size"};
  for (int i = 0; i < 2; ++i) {
    const auto v = j.find(names[i]);
    if (v == j.end() && i == 0) continue;  // offset defaults to 0
    if (v == j.end() || !v->is_number_unsigned()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, " has no '", names[i], "' that is a non-negative integer"));
    }
    numbers[i] = v->get<uint64_t>();
  }
  return shm.Register(name, key->get<std::string>(), numbers[0], numbers[1]);
}

absl::StatusOr<std::string> Status(const OwnedRegions& shm, const std::string& name) {
  auto regions = shm.Status(name);
  if (!regions.ok()) return regions.status();
  Json list = Json::array();
  for (const SharedMemoryRegionInfo& r : *regions) {
    list.push_back(
        {{"name", r.name}, {"key", r.key}, {"offset", r.offset}, {"byte_size", r.byte_size}});
  }
  return list.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace

absl::StatusOr<SharedMemoryEndpoint> ParseSharedMemoryPath(absl::string_view path) {
  using A = SharedMemoryEndpoint::Action;
  absl::string_view rest = path;
  if (!absl::ConsumePrefix(&rest, kSharedMemoryPath)) {
    return absl::NotFoundError(absl::StrCat("no endpoint ", path));
  }
  // "/status", "/unregister", "/region/{name}/{status|register|unregister}"
  const std::vector<std::string> parts = absl::StrSplit(rest, '/');
  SharedMemoryEndpoint e;
  std::string action;
  if (parts.size() == 2 && parts[0].empty()) {
    action = parts[1];
  } else if (parts.size() == 4 && parts[0].empty() && parts[1] == "region" && !parts[2].empty()) {
    e.region = parts[2];
    action = parts[3];
  }
  if (action == "status") {
    e.action = A::kStatus;
  } else if (action == "unregister") {
    e.action = A::kUnregister;
  } else if (action == "register" && e.region) {
    e.action = A::kRegister;
  } else {
    return absl::NotFoundError(absl::StrCat("no endpoint ", path));
  }
  return e;
}

absl::StatusOr<std::string> AnswerSharedMemory(const OwnedRegions& shm,
                                               const SharedMemoryEndpoint& endpoint,
                                               absl::string_view body) {
  using A = SharedMemoryEndpoint::Action;
  if (!shm) {
    return absl::UnimplementedError(
        "this server does not accept shared memory (start it with --allow-shared-memory)");
  }
  const std::string region = endpoint.region.value_or("");
  absl::Status done;
  switch (endpoint.action) {
    case A::kStatus:
      return Status(shm, region);
    case A::kRegister:
      done = Register(shm, region, body);
      break;
    case A::kUnregister:
      done = UnregisterRegion(shm, region);
      break;
  }
  if (!done.ok()) return done;
  return std::string("{}");
}

}  // namespace myops::server::kserve
