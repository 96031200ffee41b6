# The Windows build (a MinGW-w64 cross build; docs/packaging.md, "Windows"):
# what each executable carries and what the installer holds.
#   folio_windows_executable(TARGET)  the UTF-8 manifest, and the studio's icon
#   install rules                    the Qt DLLs and plugins the studio loads,
#                                    the MinGW runtime, third-party licences
#   CPack                            NSIS (64-bit) and a portable ZIP
# Everything lands in one folder (bin/): Windows finds DLLs beside the .exe and
# Qt finds platforms/ and styles/ there.

# The icon: the studio's SVG rendered at Windows' sizes into one .ico.
find_program(FOLIO_RSVG_CONVERT rsvg-convert REQUIRED)
find_program(FOLIO_ICOTOOL icotool REQUIRED)  # Debian icoutils
set(FOLIO_WINDOWS_ICON "${CMAKE_BINARY_DIR}/windows/folio.ico")
set(icon_pngs "")
foreach(size 16 32 48 256)
  set(png "${CMAKE_BINARY_DIR}/windows/folio-${size}.png")
  add_custom_command(OUTPUT "${png}" DEPENDS "${PROJECT_SOURCE_DIR}/resources/icons/folio.svg"
    COMMAND ${CMAKE_COMMAND} -E make_directory "${CMAKE_BINARY_DIR}/windows"
    COMMAND "${FOLIO_RSVG_CONVERT}" -w ${size} -h ${size} -o "${png}" "${PROJECT_SOURCE_DIR}/resources/icons/folio.svg"
    VERBATIM)
  list(APPEND icon_pngs "${png}")
endforeach()
add_custom_command(OUTPUT "${FOLIO_WINDOWS_ICON}" DEPENDS ${icon_pngs}
  COMMAND "${FOLIO_ICOTOOL}" -c -o "${FOLIO_WINDOWS_ICON}" ${icon_pngs} VERBATIM)
add_custom_target(folio_windows_icon DEPENDS "${FOLIO_WINDOWS_ICON}")

# A resource script per executable: the manifest (resource 1 of type 24, what
# the loader reads) and, for the studio, the icon Explorer and the taskbar show.
function(folio_windows_executable target)
  cmake_parse_arguments(arg "ICON" "" "" ${ARGN})
  set(rc "${CMAKE_BINARY_DIR}/windows/${target}.rc")
  set(content "1 24 \"${PROJECT_SOURCE_DIR}/packaging/windows/folio.manifest\"\n")
  if(arg_ICON)
    string(APPEND content "1 ICON \"${FOLIO_WINDOWS_ICON}\"\n")
    add_dependencies(${target} folio_windows_icon)
  endif()
  file(WRITE "${rc}" "${content}")
  target_sources(${target} PRIVATE "${rc}")
  set(deps "${PROJECT_SOURCE_DIR}/packaging/windows/folio.manifest")
  if(arg_ICON)
    list(APPEND deps "${FOLIO_WINDOWS_ICON}")
  endif()
  set_source_files_properties("${rc}" PROPERTIES OBJECT_DEPENDS "${deps}")
endfunction()

# The C++ runtime the Qt DLLs and the studio link (MinGW's CLI links it
# statically): MinGW's DLLs, found by the compiler; MSVC's, by CMake's module.
if(MINGW)
  set(FOLIO_MINGW_RUNTIME "")
  foreach(dll libstdc++-6.dll libgcc_s_seh-1.dll libwinpthread-1.dll)
    execute_process(COMMAND "${CMAKE_CXX_COMPILER}" -print-file-name=${dll}
                    OUTPUT_VARIABLE path OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(NOT IS_ABSOLUTE "${path}" OR NOT EXISTS "${path}")
      message(FATAL_ERROR "the MinGW runtime ${dll} was not found by ${CMAKE_CXX_COMPILER} -print-file-name")
    endif()
    list(APPEND FOLIO_MINGW_RUNTIME "${path}")
  endforeach()
  install(FILES ${FOLIO_MINGW_RUNTIME} DESTINATION bin)
else()
  set(CMAKE_INSTALL_SYSTEM_RUNTIME_DESTINATION bin)
  include(InstallRequiredSystemLibraries)
endif()

if(FOLIO_WITH_QT)
  # windeployqt does not exist in a cross build: the studio's Qt, named.
  find_package(Qt6 6.4 REQUIRED COMPONENTS Core Gui Widgets PrintSupport Network)
  foreach(module Core Gui Widgets PrintSupport Network)
    install(FILES "$<TARGET_FILE:Qt6::${module}>" DESTINATION bin)
  endforeach()
  install(FILES "$<TARGET_FILE:Qt6::QWindowsIntegrationPlugin>" DESTINATION bin/platforms)
  install(FILES "$<TARGET_FILE:Qt6::QWindowsVistaStylePlugin>" DESTINATION bin/styles)
  if(TARGET Qt6::Svg)  # a Qt with Qt Svg (not the MinGW one: ui/CMakeLists.txt then compiles PNGs in)
    install(FILES "$<TARGET_FILE:Qt6::Svg>" DESTINATION bin)
    install(FILES "$<TARGET_FILE:Qt6::QSvgIconPlugin>" DESTINATION bin/iconengines)
    install(FILES "$<TARGET_FILE:Qt6::QSvgPlugin>" DESTINATION bin/imageformats)
  endif()
  # Third-party code in the studio: Qt (LGPL-3.0, as DLLs the user may replace)
  # and QCustomPlot (GPL-3.0, compiled in). build-deps.sh puts Qt's licence
  # texts into the prefix.
  set(FOLIO_QT_LICENSE_DIR "${FOLIO_WIN_PREFIX}/share/doc/qtbase" CACHE PATH "Qt's LICENSES/ texts, shipped with its DLLs")
  foreach(licence LGPL-3.0-only GPL-3.0-only)
    set(text "${FOLIO_QT_LICENSE_DIR}/${licence}.txt")
    if(NOT EXISTS "${text}")
      message(FATAL_ERROR "Qt's licence text ${text} is missing (packaging/windows/build-deps.sh writes it; "
                          "elsewhere -DFOLIO_QT_LICENSE_DIR= names Qt's LICENSES folder)")
    endif()
    install(FILES "${text}" DESTINATION share/doc/folio/third-party RENAME Qt-${licence}.txt)
  endforeach()
  if(FOLIO_QCUSTOMPLOT_SOURCE)
    install(FILES "${FOLIO_QCUSTOMPLOT_SOURCE}/GPL.txt" DESTINATION share/doc/folio/third-party
            RENAME QCustomPlot-GPL-3.0.txt)
  endif()
endif()

set(CPACK_GENERATOR "NSIS;ZIP")
set(CPACK_SYSTEM_NAME "win64")
set(CPACK_PACKAGE_INSTALL_DIRECTORY "Folio")
set(CPACK_PACKAGE_INSTALL_REGISTRY_KEY "Folio")
# CPack's NSIS default is a 32-bit installer, which 64-bit-only Wine (and a
# 64-bit program) should not be: a 64-bit Unicode one into Program Files.
set(CPACK_NSIS_DEFINES "Target amd64-unicode")
set(CPACK_NSIS_INSTALL_ROOT "$PROGRAMFILES64")
set(CPACK_NSIS_DISPLAY_NAME "Folio ${PROJECT_VERSION}")
set(CPACK_NSIS_PACKAGE_NAME "Folio")  # the installer's title and the Start-menu folder
set(CPACK_NSIS_MUI_ICON "${FOLIO_WINDOWS_ICON}")
set(CPACK_NSIS_MUI_UNIICON "${FOLIO_WINDOWS_ICON}")
set(CPACK_NSIS_INSTALLED_ICON_NAME "bin\\\\folio-studio.exe")
set(CPACK_NSIS_ENABLE_UNINSTALL_BEFORE_INSTALL ON)
set(CPACK_NSIS_EXECUTABLES_DIRECTORY "bin")
if(FOLIO_WITH_QT)
  set(CPACK_PACKAGE_EXECUTABLES "folio-studio;Folio Studio")
endif()
