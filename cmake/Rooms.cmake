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
