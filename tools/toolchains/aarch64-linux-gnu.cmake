# Cross-compiling for 64-bit Arm (aarch64) on Debian with its cross toolchain and multiarch:
#   apt-get install crossbuild-essential-arm64 qemu-user pkgconf:arm64 <the -dev packages>:arm64
#   cmake -S . -B build-arm64 --toolchain tools/toolchains/aarch64-linux-gnu.cmake
# tools/platforms/aarch64.sh does all of it and runs the tests under qemu-user.
#
# Where things are on Debian: the cross compiler's own libc/libstdc++ under /usr/aarch64-linux-gnu,
# the arm64 -dev packages (by multiarch) under /usr/lib/aarch64-linux-gnu and
# /usr/include/aarch64-linux-gnu, the header-only ones under /usr/include.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(INFER_CROSS_TRIPLET aarch64-linux-gnu)

set(CMAKE_C_COMPILER ${INFER_CROSS_TRIPLET}-gcc)
set(CMAKE_CXX_COMPILER ${INFER_CROSS_TRIPLET}-g++)
# CMake derives this from the compiler's implicit link directories; set it so that every
# /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE} lookup (OpenBLAS's) means the arm64 directory.
set(CMAKE_LIBRARY_ARCHITECTURE ${INFER_CROSS_TRIPLET})

# Search the cross root and the multiarch host root ("/" with CMAKE_LIBRARY_ARCHITECTURE picks
# lib/aarch64-linux-gnu, never lib/x86_64-linux-gnu); programs are the build machine's.
set(CMAKE_FIND_ROOT_PATH /usr/${INFER_CROSS_TRIPLET} /)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# pkg-config with the arm64 search path (pkgconf:arm64 installs the triplet-prefixed name).
find_program(PKG_CONFIG_EXECUTABLE NAMES ${INFER_CROSS_TRIPLET}-pkg-config)

# xtensor and xtensor-blas are header-only, but Debian 12 ships their CMake configs in the
# arch directory and libxtensor-dev:arm64 cannot be installed (it depends on xtl-dev:arm64, and
# xtl-dev is Architecture: all without Multi-Arch: foreign). The amd64 package's config files
# name nothing arch-specific (headers in /usr/include), so use them when no arm64 one exists.
foreach(pkg xtensor xtensor-blas xsimd)
  if(NOT EXISTS /usr/lib/${INFER_CROSS_TRIPLET}/cmake/${pkg}
     AND EXISTS /usr/lib/x86_64-linux-gnu/cmake/${pkg}/${pkg}Config.cmake)
    set(${pkg}_DIR /usr/lib/x86_64-linux-gnu/cmake/${pkg} CACHE PATH "header-only ${pkg}: the build machine's config")
  endif()
endforeach()

# ctest (and catch_discover_tests at build time) run the arm64 binaries under qemu-user.
# The multiarch libc6:arm64 that the -dev packages bring installs the loader at
# /lib/ld-linux-aarch64.so.1 beside its libc in /lib/aarch64-linux-gnu; then qemu needs no -L
# (with -L /usr/aarch64-linux-gnu it would pair the cross package's loader, another Debian
# revision, with the multiarch libc). Without libc6:arm64, the cross root is the only libc.
# QEMU_CPU in the environment picks the emulated CPU (default "max", which has SVE; e.g.
# QEMU_CPU=cortex-a72 for NEON only).
find_program(INFER_QEMU_AARCH64 NAMES qemu-aarch64 qemu-aarch64-static REQUIRED)
if(EXISTS /lib/ld-linux-aarch64.so.1 AND EXISTS /lib/${INFER_CROSS_TRIPLET}/libc.so.6)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${INFER_QEMU_AARCH64})
else()
  set(CMAKE_CROSSCOMPILING_EMULATOR ${INFER_QEMU_AARCH64} -L /usr/${INFER_CROSS_TRIPLET})
endif()

# The CUDA backend is for the build machine's nvcc (an x86-64 host compiler): off when crossing.
set(INFER_CUDA OFF CACHE BOOL "Build the CUDA backend of lib/ (off when cross-compiling)")
