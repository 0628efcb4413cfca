# Cross-compiles omnibus for 64-bit Arm Linux with Debian's cross compiler
# (g++-aarch64-linux-gnu) against Debian's arm64 multiarch libraries
# (libfmt-dev:arm64 and the rest of scripts/test_aarch64.sh's list). The
# binaries run under qemu-user as `qemu-aarch64 BINARY`: the arm64 libc that
# multiarch installed (libc6:arm64) loads them. Not with
# `-L /usr/aarch64-linux-gnu`: that takes the cross package's ld.so, which
# then loads the multiarch libc.so.6 of another Debian revision, and a
# process whose threads contend for a std::mutex hangs there.
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64.cmake
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

# Multiarch: the arm64 libraries live beside the host's, in
# /usr/lib/aarch64-linux-gnu, so the root stays / and CMake's own
# CMAKE_LIBRARY_ARCHITECTURE lookup finds the arm64 package configs. Build
# tools (programs) still come from the host.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu /)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# pkg-config must read the arm64 .pc files only, never the host's.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")

# Tests and try_run programs run under qemu-user.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64)
