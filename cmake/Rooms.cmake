# gossipd_room(TARGET FOLDER): TARGET's public include path holds FOLDER
# only (a link under build/include/TARGET/), so `#include "FOLDER/x.h"`
# resolves exactly where TARGET is linked. A room that includes a header of
# a room it does not link fails to compile: the build checks the layering.
function(gossipd_room target folder)
  set(root ${CMAKE_BINARY_DIR}/include/${target})
  get_filename_component(parent ${root}/${folder} DIRECTORY)
  file(MAKE_DIRECTORY ${parent})
  file(CREATE_LINK ${CMAKE_CURRENT_SOURCE_DIR} ${root}/${folder} SYMBOLIC)
  target_include_directories(${target} PUBLIC ${root})
endfunction()

# gossipd_control_plane(TARGET): TARGET is control-plane code (flags,
# commands, reports, the planners and their commands, the benches' drivers,
# the member's setup, status and metrics, membership and state transfer,
# the training loop, the modes' workers, the simulator's driver): it runs
# once a command, a round or a step, not once a value (the kernels that do:
# trainer/, protocol/, a mode's parts, stay at the build type's flags).
# Compiled with GOSSIPD_CONTROL_OPTIMIZE where that is set; empty, the
# build type's flags. Its default: -O1 in a Release build, where GCC's -O3
# on these rooms was 433 s of CPU of the build's ~1,080 and -O1 is 280 s,
# and no difference the tests measure (eight multi-process training, grid,
# compare and simulate tests, alternated twice: 53.0 and 53.3 s of CPU at
# -O3, 52.5 and 54.9 at -O1); tests/sanitized_build.sh sets -O0, where clang's
# -O2 with the sanitizers is most of the build (daemon/cluster's unity file
# 48 s at -O2, 20 s at -O0). Set only at a tree's first configure: pass
# -DGOSSIPD_CONTROL_OPTIMIZE= to change it later ("" for the build type's).
if(CMAKE_BUILD_TYPE STREQUAL "Release")
  set(control_optimize_default "-O1")
else()
  set(control_optimize_default "")
endif()
set(GOSSIPD_CONTROL_OPTIMIZE "${control_optimize_default}" CACHE STRING
    "Optimisation flag for the control plane's rooms; empty: the build type's (default: -O1 in Release)")
function(gossipd_control_plane target)
  if(GOSSIPD_CONTROL_OPTIMIZE)
    target_compile_options(${target} PRIVATE ${GOSSIPD_CONTROL_OPTIMIZE})
  endif()
endfunction()

# gossipd_mode(TARGET): TARGET is a mode's library (daemon/modes/<name>/).
# The registry (daemon/modes: modes.cc) links every library so declared;
# nothing else links them all.
function(gossipd_mode target)
  set_property(GLOBAL APPEND PROPERTY GOSSIPD_MODE_LIBRARIES ${target})
  # Its folder's name: its tests, where it has any, are tests/modes/<name>/.
  get_filename_component(folder ${CMAKE_CURRENT_SOURCE_DIR} NAME)
  set_property(GLOBAL APPEND PROPERTY GOSSIPD_MODE_FOLDERS ${folder})
endfunction()

# gossipd_mode_tools(TARGET): TARGET holds a mode's own gossipctl commands
# (daemon/modes/<name>/, on daemon/ctl's shared tools). The tools registry
# (daemon/modes: tools.cc) links every library so declared; gossipd links
# none of them.
function(gossipd_mode_tools target)
  set_property(GLOBAL APPEND PROPERTY GOSSIPD_MODE_TOOL_LIBRARIES ${target})
  gossipd_control_plane(${target})
endfunction()

# gossipd_mode_proto(TARGET PROTO): TARGET is a mode's own messages (PROTO,
# in the mode's folder, package gossipd.proto), compiled as
# "daemon/modes/<name>/<proto>.pb.h". The shared schema (proto/) carries them
# without naming them: a status rides in Status.mode_status (an Any; its
# descriptor is in every binary that links the mode, which is what reads and
# writes it as JSON), a wire note in Envelope.mode_note (its bytes), a
# tool's file is the tool's own.
function(gossipd_mode_proto target proto)
  file(RELATIVE_PATH folder ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR})
  set(root ${CMAKE_BINARY_DIR}/include/${target})
  file(MAKE_DIRECTORY ${root}/${folder})
  add_library(${target} STATIC ${proto})
  protobuf_generate(TARGET ${target} LANGUAGE cpp PROTOC_OUT_DIR ${root}/${folder})
  target_include_directories(${target} PUBLIC ${root})
  target_link_libraries(${target} PUBLIC protobuf::libprotobuf)
  set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON)
endfunction()
