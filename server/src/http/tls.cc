// TLS of the HTTP listeners (see http/tls.h), with OpenSSL 3's API.
#include "http/tls.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

namespace myops::server {
namespace {

// What OpenSSL says went wrong, after `what`.
std::string OpenSslError(const std::string& what) {
  std::string text = what;
  while (unsigned long code = ERR_get_error()) {
    char buffer[256];
    ERR_error_string_n(code, buffer, sizeof(buffer));
    text += std::string(": ") + buffer;
  }
  return text;
}

}  // namespace

bool ConfigureHttpTls(void* ssl_ctx, const HttpTlsFiles& files, std::string* error) {
  auto* ctx = static_cast<SSL_CTX*>(ssl_ctx);
  ERR_clear_error();
  if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1) {
    *error = OpenSslError("cannot require TLS 1.2");
    return false;
  }
  if (SSL_CTX_use_certificate_chain_file(ctx, files.cert_file.c_str()) != 1) {
    *error = OpenSslError("--tls-cert " + files.cert_file);
    return false;
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, files.key_file.c_str(), SSL_FILETYPE_PEM) != 1 ||
      SSL_CTX_check_private_key(ctx) != 1) {
    *error = OpenSslError("--tls-key " + files.key_file);
    return false;
  }
  if (!files.client_ca_file.empty()) {
    if (SSL_CTX_load_verify_locations(ctx, files.client_ca_file.c_str(), nullptr) != 1) {
      *error = OpenSslError("--tls-client-ca " + files.client_ca_file);
      return false;
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  }
  return true;
}

std::string CheckTlsFiles(const HttpTlsFiles& files) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr) return OpenSslError("cannot create a TLS context");
  std::string error;
  ConfigureHttpTls(ctx, files, &error);
  SSL_CTX_free(ctx);
  return error;
}

}  // namespace myops::server
