/* libssl.so as Debian's civetweb 1.15 finds it: civetweb loads OpenSSL at run time with
 * dlopen("libssl.so") and dlsym, and looks up SSL_get_peer_certificate, the OpenSSL 1.1
 * name that OpenSSL 3 turned into a macro for SSL_get1_peer_certificate (libssl.so.3 does
 * not export it; civetweb then crashes on the first TLS connection). This object, with
 * soname "libssl.so" and linked against libssl.so.3, is loaded with myops-server, so
 * civetweb's dlopen returns it (glibc matches loaded objects by soname) and its dlsym
 * finds every other function in libssl.so.3, a dependency. */
#include <openssl/ssl.h>

#undef SSL_get_peer_certificate
X509* SSL_get_peer_certificate(const SSL* ssl);
X509* SSL_get_peer_certificate(const SSL* ssl) { return SSL_get1_peer_certificate(ssl); }
