// The one way omnibus includes cpp-httplib (server/ and bench/ both do).
// Debian's libcpp-httplib-dev is the library build ("split" header plus libcpp-httplib.so) compiled with
// OpenSSL, zlib and Brotli support, and those macros change the layout of
// httplib::Request and the client classes. Every file including the header
// must define them exactly as the library was built, or objects passed
// across the boundary are read with the wrong layout. pkg-config's Cflags
// for cpp-httplib say the same; the guards keep a build that passes them
// from redefining them.
#pragma once

#ifndef CPPHTTPLIB_OPENSSL_SUPPORT
#define CPPHTTPLIB_OPENSSL_SUPPORT
#endif
#ifndef CPPHTTPLIB_ZLIB_SUPPORT
#define CPPHTTPLIB_ZLIB_SUPPORT
#endif
#ifndef CPPHTTPLIB_BROTLI_SUPPORT
#define CPPHTTPLIB_BROTLI_SUPPORT
#endif

#include <httplib.h>
