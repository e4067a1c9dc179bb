# Installs trainperf into a scratch prefix, checks that the CLI is installed as
# BINDIR/trainperf and runs (--version prints VERSION), then configures, builds and
# runs a consumer project that uses find_package(trainperf CONFIG). With PYTHON (the
# interpreter the Python module is built for), also that the package installed in
# PYTHON_DIR imports from there and has the CLI's version.
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
function(run)
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGV}")
  endif()
endfunction()
run(${CMAKE_COMMAND} --install ${BINARY_DIR} --prefix ${prefix})
set(cli ${prefix}/${BINDIR}/trainperf)
if(NOT EXISTS ${cli})
  message(FATAL_ERROR "the CLI is not installed: ${cli} is missing")
endif()
execute_process(COMMAND ${cli} --version RESULT_VARIABLE rc OUTPUT_VARIABLE out)
if(NOT rc EQUAL 0 OR NOT out STREQUAL "trainperf ${VERSION}\n")
  message(FATAL_ERROR "${cli} --version: exit ${rc}, printed '${out}', expected 'trainperf ${VERSION}'")
endif()
run(${CMAKE_COMMAND} -S ${CONSUMER_DIR} -B ${WORK_DIR}/build -DCMAKE_PREFIX_PATH=${prefix})
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
run(${WORK_DIR}/build/consumer)

if(PYTHON)
  set(site ${prefix}/${PYTHON_DIR})
  execute_process(COMMAND ${CMAKE_COMMAND} -E env PYTHONPATH=${site} PYTHONDONTWRITEBYTECODE=1
                          ${PYTHON} -c "import trainperf; print(trainperf.__version__, trainperf.__file__)"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR NOT out STREQUAL "${VERSION} ${site}/trainperf/__init__.py\n")
    message(FATAL_ERROR "import trainperf from ${site}: exit ${rc}, printed '${out}' '${err}'")
  endif()
endif()
