// TLS for the server's HTTP listeners: the files of gRPC's --tls-cert / --tls-key /
// --tls-client-ca loaded into an SSL_CTX (the REST port's, http/server.h; the one civetweb
// hands to the metrics endpoint's init_ssl callback), so that they serve the same
// certificate, and require the same client certificates, as the gRPC port. TLS 1.2 at
// least. (Debian's civetweb needs the libssl/libcrypto shims of src/http/civetweb_tls to
// find OpenSSL 3.)
#pragma once

#include <string>

namespace myops::server {

struct HttpTlsFiles {
  std::string cert_file;       // PEM certificate chain; empty: no TLS
  std::string key_file;        // PEM private key
  std::string client_ca_file;  // PEM CA bundle; set: client certificates required
};

// Configures `ssl_ctx` (an SSL_CTX*) from `files`; false with the reason in `*error`.
bool ConfigureHttpTls(void* ssl_ctx, const HttpTlsFiles& files, std::string* error);

// Whether `files` load (ConfigureHttpTls on a scratch context): the certificate chain, a
// private key that matches it, the client CA. The server checks them at start-up so that
// a key that does not match its certificate is named in one line before any port opens,
// instead of as gRPC's handshaker log. "" when they load, else the reason.
std::string CheckTlsFiles(const HttpTlsFiles& files);

}  // namespace myops::server
