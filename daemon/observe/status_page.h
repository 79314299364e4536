#pragma once

#include <string>

namespace gossipd::daemon {

// The page a member's HTTP port serves at /: the cluster as this member
// sees it (its view, its state, rounds, rounds/s and bytes/s, consensus
// distance, skipped segments) and its loss and accuracy curves, updated
// every second from /status and /history. One self-contained HTML file
// compiled into the binary: no file beside it, nothing fetched from
// elsewhere.
const std::string& status_page_html();

}  // namespace gossipd::daemon
