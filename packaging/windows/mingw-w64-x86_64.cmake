# CMake toolchain for the Windows build: Debian's MinGW-w64 (posix threads)
# targeting 64-bit Windows. FOLIO_WIN_PREFIX is the folder build-deps.sh fills
# (Qt, PCRE2, nlohmann-json, cpp-httplib built or copied for MinGW); nothing is
# looked up in the host's /usr, so no Linux header leaks into the build.
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(CMAKE_C_COMPILER x86_64-w64-mingw32-gcc-posix)
set(CMAKE_CXX_COMPILER x86_64-w64-mingw32-g++-posix)
set(CMAKE_RC_COMPILER x86_64-w64-mingw32-windres)
if(NOT FOLIO_WIN_PREFIX AND DEFINED ENV{FOLIO_WIN_PREFIX})
  set(FOLIO_WIN_PREFIX "$ENV{FOLIO_WIN_PREFIX}")
endif()
# try_compile reads this file again, in the same process: pass the prefix on,
# or its empty value would reset PKG_CONFIG_LIBDIR below for the whole run.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES FOLIO_WIN_PREFIX)
set(CMAKE_FIND_ROOT_PATH /usr/x86_64-w64-mingw32 ${FOLIO_WIN_PREFIX})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# pkg-config reads the prefix's .pc files only.
if(FOLIO_WIN_PREFIX)
  set(ENV{PKG_CONFIG_LIBDIR} "${FOLIO_WIN_PREFIX}/lib/pkgconfig")
  set(ENV{PKG_CONFIG_SYSROOT_DIR} "")
endif()
