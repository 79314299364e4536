# Sourced by the benchmarks and the soak test: reading a worker's
# `gossipd run --control-out FILE` records (JSON lines, proto ControlRecord
# with proto field names and every field printed: "listening" first, then
# one of "done", "stopped", "failed" with "round", "param_hash" and the final
# "status"). Plain awk, no jq: a small JSON walker, so a field's name inside
# "status" (round, param_hash, id, ...) is never taken for the top-level one.

# control_field FILE EVENT FIELD: FIELD of the last whole record in FILE
# whose "event" is EVENT; FIELD is a top-level name ("round", "http_port")
# or a dotted path into an object ("status.test_accuracy",
# "status.bytes_sent"). Strings are printed unquoted (uint64 fields are JSON
# strings: "round":"123" prints 123), an absent field or null as nothing.
# Exits 1, printing nothing, when FILE (missing or not) has no such record
# yet; a line not yet whole is skipped.
control_field() {
  [[ -r $1 ]] || return 1
  awk -v event="$2" -v field="$3" '
    function unquote(s,   out, i, c) {
      if (index(s, "\\") == 0) return s
      for (i = 1; i <= length(s); i++) {
        c = substr(s, i, 1)
        if (c == "\\") {
          c = substr(s, ++i, 1)
          if (c == "n") c = "\n"; else if (c == "t") c = "\t"; else if (c == "r") c = "\r"
        }
        out = out c
      }
      return out
    }
    # The path of the value about to be read: KEY in an object, [] in an array.
    function here() {
      if (sp == 0) return ""
      if (type[sp] == "[") return path[sp] "[]"
      return path[sp] == "" ? key : path[sp] "." key
    }
    function value(p, v) {
      if (p == "event") ev = v
      if (p == field) { got = (v == "null") ? "" : v }
    }
    {
      line = $0; sp = 0; wantkey = 0; key = ""; ev = ""; got = ""; opened = 0; bad = 0
      while (line != "") {
        sub(/^[ \t\r]+/, "", line)
        if (line == "") break
        if (match(line, /^"([^"\\]|\\.)*"/)) {
          tok = substr(line, 2, RLENGTH - 2); line = substr(line, RLENGTH + 1)
          if (sp > 0 && type[sp] == "{" && wantkey) key = unquote(tok)
          else value(here(), unquote(tok))
        } else if (match(line, /^[{}\[\],:]/)) {
          tok = substr(line, 1, 1); line = substr(line, 2)
          if (tok == "{" || tok == "[") {
            p = here(); sp++; path[sp] = p; type[sp] = tok; wantkey = (tok == "{"); opened = 1
          } else if (tok == "}" || tok == "]") {
            if (sp == 0) { bad = 1; break }
            sp--; wantkey = 0
          } else if (tok == ",") {
            wantkey = (sp > 0 && type[sp] == "{")
          } else {
            wantkey = 0
          }
        } else if (match(line, /^[^ \t\r{}\[\],:"]+/)) {
          value(here(), substr(line, 1, RLENGTH)); line = substr(line, RLENGTH + 1)
        } else { bad = 1; break }
      }
      if (!bad && opened && sp == 0 && ev == event) { found = 1; last = got }
    }
    END { if (found) print last; exit !found }' "$1"
}

# control_http_port FILE: the HTTP port of the worker's "listening" record,
# nothing (exit 1) before it has listened or when it serves no HTTP (0).
control_http_port() {
  local p
  p=$(control_field "$1" listening http_port) || return 1
  [[ -n $p && $p != 0 ]] || return 1
  echo "$p"
}
