# Run by ctest (style/layers) as `cmake -DSRC=<source root> -P cmake/check_layers.cmake`.
# The GPU worker (runtime/worker/) is a separate process that talks to the driver over the frame
# protocol only. Its files and the driver's must not grow into each other:
#   - nothing under runtime/ outside worker/ includes a header of runtime/worker/;
#   - the worker includes, of the driver's headers, only the protocol and status, and the
#     leaves every part shares (sha256.h, and registry.h for its `kevo worker` command entry).
cmake_minimum_required(VERSION 3.20)
set(allowed proto.h status.h sha256.h registry.h)
file(GLOB worker_headers RELATIVE ${SRC}/runtime/worker ${SRC}/runtime/worker/*.h)
file(GLOB worker_files ${SRC}/runtime/worker/*.[ch])
file(GLOB driver_files ${SRC}/runtime/*.[ch])
set(bad "")
foreach(f ${driver_files})
  file(STRINGS ${f} incs REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
  foreach(line ${incs})
    string(REGEX REPLACE "^[^\"]*\"([^\"]+)\".*$" "\\1" h "${line}")
    get_filename_component(base ${h} NAME)
    if(h MATCHES "(^|/)worker/" OR base IN_LIST worker_headers)
      file(RELATIVE_PATH r ${SRC} ${f})
      string(APPEND bad "  ${r} includes the worker's ${h}\n")
    endif()
  endforeach()
endforeach()
foreach(f ${worker_files})
  file(STRINGS ${f} incs REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
  foreach(line ${incs})
    string(REGEX REPLACE "^[^\"]*\"([^\"]+)\".*$" "\\1" h "${line}")
    if(NOT h IN_LIST worker_headers AND NOT h IN_LIST allowed)
      file(RELATIVE_PATH r ${SRC} ${f})
      string(APPEND bad "  ${r} includes the driver's ${h}\n")
    endif()
  endforeach()
endforeach()
if(bad)
  message(FATAL_ERROR "runtime/worker/ and the driver include each other's internals "
                      "(cmake/check_layers.cmake says what may cross):\n${bad}")
endif()
