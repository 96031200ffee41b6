# What `cmake --install` puts where (XDG places under the prefix), and CPack:
# .deb, .rpm and a tarball from `cpack` in the build folder, with versioned
# names (folio_0.1.0_amd64.deb, folio-0.1.0-1.x86_64.rpm, folio-0.1.0-Linux.tar.gz).
# No model files: the studio's first run says how to get one.
# Tested by installing them: packaging/linux/test-install.sh (docs/packaging.md).
install(FILES "${PROJECT_SOURCE_DIR}/README.md" "${PROJECT_SOURCE_DIR}/LICENSE"
              "${PROJECT_SOURCE_DIR}/docs/architecture.md" "${PROJECT_SOURCE_DIR}/docs/studio.md"
              "${PROJECT_SOURCE_DIR}/docs/benchmarks.md" "${PROJECT_SOURCE_DIR}/docs/packaging.md"
        DESTINATION share/doc/folio)
# Debian's place for the licence.
install(FILES "${PROJECT_SOURCE_DIR}/LICENSE" DESTINATION share/doc/folio RENAME copyright)

set(CPACK_PACKAGE_NAME "folio")
set(CPACK_PACKAGE_VENDOR "Folio")
set(CPACK_PACKAGE_CONTACT "Folio developers <folio@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Desktop LLM inference studio (GGUF, paged KV cache, continuous batching)")
set(CPACK_PACKAGE_DESCRIPTION "Folio runs GGUF and Hugging Face models on your own machine with a
continuous-batching engine (paged KV cache, prefix caching), on the CPU or an
NVIDIA GPU. folio-studio is the desktop app (chat, KV block map, live plots);
folio is the command-line tool (run, chat, bench, perplexity, inspect).")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_RESOURCE_FILE_LICENSE "${PROJECT_SOURCE_DIR}/LICENSE")
if(NOT WIN32)  # Windows: NSIS and ZIP (packaging/windows/Windows.cmake)
  set(CPACK_GENERATOR "DEB;RPM;TGZ")
endif()
set(CPACK_STRIP_FILES ON)

# Debian: libraries from dpkg-shlibdeps; the Qt plugins the studio loads at
# run time (the platforms, the SVG icon engine) are no linked library, so they
# are named here.
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SECTION "science")
if(FOLIO_WITH_QT)
  set(CPACK_DEBIAN_PACKAGE_DEPENDS "qt6-qpa-plugins, libqt6svg6")
endif()

# RPM: requirements found by rpmbuild's automatic dependency scan.
set(CPACK_RPM_FILE_NAME RPM-DEFAULT)
set(CPACK_RPM_PACKAGE_LICENSE "MIT")
set(CPACK_RPM_PACKAGE_GROUP "Applications/Engineering")
set(CPACK_RPM_PACKAGE_AUTOREQ ON)
set(CPACK_RPM_EXCLUDE_FROM_AUTO_FILELIST_ADDITION /usr/share/applications /usr/share/metainfo
    /usr/share/icons /usr/share/icons/hicolor /usr/share/icons/hicolor/scalable
    /usr/share/icons/hicolor/scalable/apps /usr/share/doc)

if(FOLIO_HAVE_CUDA)
  # The CUDA runtime and cuBLAS come from NVIDIA's packages, not Debian's:
  # dpkg-shlibdeps cannot name them. Such a package is for machines set up with
  # NVIDIA's repository; the release packages are built without CUDA.
  message(STATUS "Folio: packages of this build need the CUDA ${CUDAToolkit_VERSION_MAJOR} runtime and "
                 "cuBLAS from NVIDIA's repository (build packages with -DFOLIO_WITH_CUDA=OFF for a CPU package)")
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS "${CUDAToolkit_LIBRARY_DIR}")
endif()
include(CPack)
