#!/usr/bin/env python3
"""The page a member serves at /, in headless Chromium with four members
training behind it.

Asserts: the HTML is self-contained (nothing fetched from elsewhere: no
src, href, url() or @import, fetch() only of the member's own paths); once
the page has run, its accuracy and loss curves hold a point for each
evaluation /history held before it opened (counted from the DOM), it shows
the member's state and the four members of its view; Chromium logs no console
message (the page logs none; an uncaught error would be one); a
screenshot is written.

Usage: status_page.py GOSSIPD   (GOSSIPD_PAGE_SCREENSHOT=FILE keeps the screenshot there)
Skipped (one line, exit 0) where `chromium` is not installed: as root,
deploy/install-deps.sh --deploy installs it (tests/run.sh does).
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from local_members import free_port, get, start_members, stop
from local_members import wait_for as wait_until

TIMEOUT = 60  # seconds any one condition is waited for
EVALUATIONS = 4  # /history holds this many before the page opens
MEMBERS = 4


def check_self_contained(html):
    for pattern in (r"\bsrc\s*=", r"\bhref\s*=", r"url\(", r"@import", r"\bimport\("):
        if re.search(pattern, html):
            sys.exit(f"status_page: the page would fetch from elsewhere ({pattern} in it)")
    fetched = set(re.findall(r'json\("([^"]*)"\)', html)) | set(re.findall(r'fetch\("([^"]*)"', html))
    if fetched != {"/status", "/history"}:
        sys.exit(f"status_page: the page fetches {sorted(fetched)}, not only /status and /history")


def chromium(browser, work, url, *args):
    """Runs headless Chromium on url for 3 s of page time: (stdout, console lines)."""
    profile = tempfile.mkdtemp(dir=work)
    r = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}",
                        "--virtual-time-budget=3000", "--enable-logging=stderr", "--v=0", *args, url],
                       capture_output=True, text=True, timeout=120)
    console = [line for line in r.stderr.splitlines() if ":CONSOLE" in line]
    return r.stdout, console


def svg_points(dom, svg_id):
    m = re.search(r'<svg id="%s"[^>]*>(.*?)</svg>' % svg_id, dom, re.S)
    if not m:
        sys.exit(f"status_page: no <svg id=\"{svg_id}\"> in the page's DOM")
    return len(re.findall(r'<circle class="pt"', m.group(1)))


def wait_for(what, fn):
    return wait_until(what, fn, TIMEOUT, "status_page")


def main():
    gossipd = sys.argv[1]
    browser = shutil.which("chromium")
    if not browser:
        print("status_page: SKIPPED: no chromium (as root: deploy/install-deps.sh --deploy)")
        return
    work = tempfile.mkdtemp(prefix="gossipd_page_")
    procs = []
    try:
        procs, http = start_members(gossipd, work, MEMBERS, "page",
                                    ["--evals-per-epoch", "4", "--inject-step-delay-ms", "20"])
        url = f"http://127.0.0.1:{http[0]}/"
        held = wait_for(f"{EVALUATIONS} evaluations in /history",
                        lambda: len(h := json.loads(get(url + "history"))) >= EVALUATIONS and h)
        check_self_contained(get(url))
        dom, console = chromium(browser, work, url, "--dump-dom")
        if console:
            sys.exit("status_page: console messages:\n" + "\n".join(console))
        for svg in ("acc", "lossplot"):
            if svg_points(dom, svg) < len(held):
                sys.exit(f"status_page: {svg_points(dom, svg)} points in #{svg}, /history held {len(held)}")
        if 'id="state" class="state training">training<' not in dom:
            sys.exit("status_page: the page does not show the member training")
        rows = re.findall(r"<tr><td>(w\d)</td>", dom)
        if rows != [f"w{i}" for i in range(MEMBERS)]:
            sys.exit(f"status_page: members shown {rows}, not w0..w{MEMBERS - 1}")
        shot = os.path.join(work, "page.png")
        chromium(browser, work, url, "--window-size=1300,900", f"--screenshot={shot}")
        if not os.path.exists(shot) or open(shot, "rb").read(8) != b"\x89PNG\r\n\x1a\n":
            sys.exit("status_page: no screenshot written")
        if os.environ.get("GOSSIPD_PAGE_SCREENSHOT"):
            shutil.copyfile(shot, os.environ["GOSSIPD_PAGE_SCREENSHOT"])
        print(f"status_page: {svg_points(dom, 'acc')} accuracy points ({len(held)} in /history before), "
              f"members w0..w{MEMBERS - 1}, no console message, screenshot {os.path.getsize(shot)} bytes")
    finally:
        stop(procs, work)


if __name__ == "__main__":
    main()
