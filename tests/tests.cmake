# Test layers, all under ctest (see tests/README.md):
#   c/test_*.c            C unit tests of the cores, one executable each
#   lua/test_*.lua        Lua tests run by `kevo script`
#   integration/test_*.sh CLI end-to-end tests (and test_*.py ones, run with python3)
#   adversarial/          bad kernels, judged by tests/gpu
#   gpu/test_*.sh         need a GPU: exit 77 (skipped, loudly) where there is none
set(KEVO_TEST_ENV "KEVO=$<TARGET_FILE:kevo>;KEVO_SRC=${CMAKE_SOURCE_DIR};KEVO_BUILD=${CMAKE_BINARY_DIR}")

file(GLOB KEVO_C_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/c/test_*.c)
foreach(t ${KEVO_C_TESTS})
  get_filename_component(n ${t} NAME_WE)
  add_executable(${n} ${t})
  target_link_libraries(${n} PRIVATE kevocore)
  target_include_directories(${n} PRIVATE ${CMAKE_SOURCE_DIR}/tests/c)
  if(n MATCHES "^test_worker")  # unit tests of the worker's internals
    target_include_directories(${n} PRIVATE ${CMAKE_SOURCE_DIR}/runtime/worker)
  endif()
  add_test(NAME c/${n} COMMAND ${n} WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
  set_tests_properties(c/${n} PROPERTIES ENVIRONMENT "${KEVO_TEST_ENV}" LABELS "c" SKIP_RETURN_CODE 77)
endforeach()

file(GLOB KEVO_LUA_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/lua/test_*.lua)
foreach(t ${KEVO_LUA_TESTS})
  get_filename_component(n ${t} NAME_WE)
  add_test(NAME lua/${n} COMMAND kevo script ${t} WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
  set_tests_properties(lua/${n} PROPERTIES ENVIRONMENT "${KEVO_TEST_ENV}" LABELS "lua" SKIP_RETURN_CODE 77)
endforeach()

file(GLOB KEVO_INT_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/integration/test_*.sh
     ${CMAKE_SOURCE_DIR}/tests/integration/test_*.py)
foreach(t ${KEVO_INT_TESTS})
  get_filename_component(n ${t} NAME_WE)
  if(t MATCHES "\\.py$")
    set(runner python3)
  else()
    set(runner bash)
  endif()
  add_test(NAME integration/${n} COMMAND ${runner} ${t} WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
  set_tests_properties(integration/${n} PROPERTIES ENVIRONMENT "${KEVO_TEST_ENV}"
    LABELS "integration" SKIP_RETURN_CODE 77 TIMEOUT 600)
endforeach()
# The Triton attack tests check that nothing on the whole filesystem was written by the
# compile sandbox's user (nobody) while they ran: any other test compiling Triton at the same
# time writes such files in its own work folder, so this one runs alone.
foreach(t integration/test_triton_attacks integration/test_triton_unprivileged)
  if(TEST ${t})
    set_tests_properties(${t} PROPERTIES RUN_SERIAL TRUE)
  endif()
endforeach()
# test_recipe_kernels runs nvcc once per recipe point, one run after another (132 runs, 70 s of
# CPU on an idle machine); in the ASan suite under load (ctest -j2 beside two CPU hogs, load 8)
# it took 286 s of the 600 s above, and it grows with every recipe. 1500 s is five times that,
# still a bound on a hang (its NVRTC twin c/test_recipes_build, 557 s in that run, has none as a
# C test); its checks are unchanged.
if(TEST integration/test_recipe_kernels)
  set_tests_properties(integration/test_recipe_kernels PROPERTIES TIMEOUT 1500)
endif()

file(GLOB KEVO_GPU_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/gpu/test_*.sh)
foreach(t ${KEVO_GPU_TESTS})
  get_filename_component(n ${t} NAME_WE)
  add_test(NAME gpu/${n} COMMAND bash ${t} WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
  set_tests_properties(gpu/${n} PROPERTIES ENVIRONMENT "${KEVO_TEST_ENV}" LABELS "gpu"
    SKIP_RETURN_CODE 77 TIMEOUT 900)
endforeach()

find_program(CLANG_FORMAT NAMES clang-format clang-format-14)
if(CLANG_FORMAT)
  file(GLOB KEVO_FORMATTED CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/runtime/*.[ch]
       ${CMAKE_SOURCE_DIR}/runtime/worker/*.[ch]
       ${CMAKE_SOURCE_DIR}/tests/c/*.[ch])
  add_test(NAME style/clang-format COMMAND ${CLANG_FORMAT} --dry-run -Werror ${KEVO_FORMATTED})
endif()

# The Lua half gets the C half's discipline: luacheck with the repository's .luacheckrc (which
# also holds lines to 100 columns).
find_program(LUACHECK luacheck)
if(LUACHECK)
  add_test(NAME style/luacheck COMMAND ${LUACHECK} --no-color --codes lua strategies tests examples bench
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set_tests_properties(style/luacheck PROPERTIES LABELS "style")
endif()

# The worker and the driver share only the protocol and status (cmake/check_layers.cmake).
add_test(NAME style/layers COMMAND ${CMAKE_COMMAND} -DSRC=${CMAKE_SOURCE_DIR}
  -P ${CMAKE_SOURCE_DIR}/cmake/check_layers.cmake)
set_tests_properties(style/layers PROPERTIES LABELS "style")
