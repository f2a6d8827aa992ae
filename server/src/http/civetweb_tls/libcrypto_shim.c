/* libcrypto.so as Debian's civetweb 1.15 finds it (see libssl_shim.c): soname
 * "libcrypto.so", linked against libcrypto.so.3, whose functions civetweb's dlsym then
 * finds. Needed where only the runtime packages are installed (the image), which have no
 * "libcrypto.so". */
void myops_civetweb_crypto_shim(void);
void myops_civetweb_crypto_shim(void) {}
