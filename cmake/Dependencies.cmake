# Finds every third-party dependency. A missing one stops configuration with
# the Debian package that provides it (deploy/install-deps.sh installs them all).
find_package(PkgConfig)

macro(gossipd_require found what package)
  if(NOT ${found})
    message(FATAL_ERROR
      "gossipd: ${what} not found. Install the Debian package '${package}' "
      "(apt-get install ${package}) or run ./deploy/install-deps.sh as root.")
  endif()
endmacro()

gossipd_require(PKG_CONFIG_FOUND "pkg-config" "pkg-config")

find_package(Threads REQUIRED)

find_package(ZLIB)
gossipd_require(ZLIB_FOUND "zlib" "zlib1g-dev")

pkg_check_modules(ZMQ IMPORTED_TARGET libzmq>=4.3)
gossipd_require(ZMQ_FOUND "libzmq" "libzmq3-dev")
# Debian's libzmq.pc carries its private requirements' flags (-isystem
# /usr/include/mit-krb5, pgm, libxml2). FindPkgConfig files the -isystem one
# under include directories on a tree's first configure and under compile
# options on every later one, so the second configure rebuilt everything
# that includes zmq.h (5 minutes of CI for the sanitizer tree). zmq.h needs
# none of them: the target gets libzmq's own include directory only.
set_target_properties(PkgConfig::ZMQ PROPERTIES
  INTERFACE_INCLUDE_DIRECTORIES "${ZMQ_INCLUDEDIR}" INTERFACE_COMPILE_OPTIONS "")
find_package(cppzmq QUIET)
gossipd_require(cppzmq_FOUND "cppzmq" "cppzmq-dev")

find_package(Protobuf)
gossipd_require(Protobuf_FOUND "protobuf" "libprotobuf-dev")
gossipd_require(Protobuf_PROTOC_EXECUTABLE "protoc" "protobuf-compiler")

find_path(ASIO_INCLUDE_DIR asio.hpp)
gossipd_require(ASIO_INCLUDE_DIR "standalone Asio" "libasio-dev")
add_library(gossipd_asio INTERFACE)
target_include_directories(gossipd_asio SYSTEM INTERFACE ${ASIO_INCLUDE_DIR})
target_compile_definitions(gossipd_asio INTERFACE ASIO_STANDALONE ASIO_NO_DEPRECATED)

find_package(spdlog QUIET)
gossipd_require(spdlog_FOUND "spdlog" "libspdlog-dev")

pkg_check_modules(OPENBLAS IMPORTED_TARGET openblas)
gossipd_require(OPENBLAS_FOUND "OpenBLAS" "libopenblas-dev")

find_package(CLI11 QUIET CONFIG)
gossipd_require(CLI11_FOUND "CLI11" "libcli11-dev")

find_package(GTest QUIET)
gossipd_require(GTest_FOUND "GoogleTest" "libgtest-dev")

# Zoltan (its hypergraph partitioner PHG, for the sparse mode's neuron
# partition) and the MPI it is built on: MPI runs in one process for Zoltan
# alone, never as the transport.
set(MPI_CXX_SKIP_MPICXX TRUE)
find_package(MPI COMPONENTS CXX QUIET)
gossipd_require(MPI_CXX_FOUND "MPI (for Zoltan)" "libopenmpi-dev")
find_path(ZOLTAN_INCLUDE_DIR zoltan.h PATH_SUFFIXES trilinos)
find_library(ZOLTAN_LIBRARY trilinos_zoltan)
gossipd_require(ZOLTAN_INCLUDE_DIR "Zoltan" "libtrilinos-zoltan-dev")
gossipd_require(ZOLTAN_LIBRARY "Zoltan" "libtrilinos-zoltan-dev")
add_library(gossipd_zoltan INTERFACE)
target_include_directories(gossipd_zoltan SYSTEM INTERFACE ${ZOLTAN_INCLUDE_DIR})
target_link_libraries(gossipd_zoltan INTERFACE ${ZOLTAN_LIBRARY} MPI::MPI_CXX)
