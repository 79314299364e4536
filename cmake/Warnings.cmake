# Strict warnings for the project's own targets (not generated code).
function(gossipd_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wshadow -Werror)
endfunction()
