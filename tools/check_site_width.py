"""Check the built site in headless Chromium at 1280 px: nothing is wider than its column.

    python tools/build_docs.py && python tools/check_site_width.py site    # what CI runs

Every page of the site (each `index.html` under the folder) is loaded in one
headless Chromium window 1280 px wide; on each, no `pre` block, no code
block inside one, no table and no table's scroll wrapper may be wider than
its box (`scrollWidth <= clientWidth`: nothing scrolls sideways or is cut
off), and the page itself may not scroll sideways. Chromium is driven
through its DevTools protocol over `--remote-debugging-pipe` (JSON messages
separated by NUL bytes on file descriptors 3 and 4), so nothing but
Chromium is needed: Debian's `chromium` package (`apt-get install chromium`).
Exit code 0 when every page fits, 1 with one line per overflowing element,
2 when Chromium is missing or does not answer.
"""

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

WIDTH, HEIGHT = 1280, 900
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run",
                  "--remote-debugging-pipe", f"--window-size={WIDTH},{HEIGHT}")
# Each element that may scroll sideways, with the path of tags that tells a reader where it is.
MEASURE = """(() => {
  const found = [];
  const root = document.scrollingElement;
  if (root.scrollWidth > root.clientWidth) {
    found.push({what: "the page", scroll: root.scrollWidth, client: root.clientWidth, text: ""});
  }
  const selector = "article pre, article pre > code, article table, article .md-typeset__scrollwrap";
  for (const element of document.querySelectorAll(selector)) {
    if (element.scrollWidth > element.clientWidth + 1) {
      const heading = [...document.querySelectorAll("article h1, article h2, article h3, article h4")]
        .filter(h => h.compareDocumentPosition(element) & Node.DOCUMENT_POSITION_FOLLOWING).pop();
      found.push({what: element.tagName.toLowerCase(), scroll: element.scrollWidth,
                  client: element.clientWidth, text: (heading ? heading.textContent : "").trim().slice(0, 60)});
    }
  }
  return found;
})()"""


class ChromiumError(RuntimeError):
    """Chromium is missing, exited, or did not answer in time."""


def chromium_binary():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    raise ChromiumError("no chromium on PATH (Debian: apt-get install chromium)")


class Browser:
    """One headless Chromium and one page, driven by DevTools messages over a pipe."""

    def __init__(self, timeout=60.0):
        self.timeout, self.next_id, self.buffer = timeout, 0, b""
        self.profile = tempfile.mkdtemp(prefix="chromium-profile-")
        to_browser_read, self.to_browser = os.pipe()
        self.from_browser, from_browser_write = os.pipe()
        # The child reads commands on fd 3 and writes answers on fd 4.
        self.process = subprocess.Popen(
            [chromium_binary(), *CHROMIUM_FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            pass_fds=(3, 4), preexec_fn=lambda: (os.dup2(to_browser_read, 3), os.dup2(from_browser_write, 4)),
        )
        os.close(to_browser_read)
        os.close(from_browser_write)
        target = self.send("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        self.send("Page.enable", session=True)
        self.send("Emulation.setDeviceMetricsOverride", session=True, width=WIDTH, height=HEIGHT,
                  deviceScaleFactor=1, mobile=False)

    def _message(self, deadline):
        while b"\0" not in self.buffer:
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise ChromiumError("chromium did not answer" if self.process.poll() is None else "chromium exited")
            chunk = os.read(self.from_browser, 1 << 16)
            if not chunk:
                raise ChromiumError("chromium closed its pipe")
            self.buffer += chunk
        message, _, self.buffer = self.buffer.partition(b"\0")
        return json.loads(message)

    def send(self, method, session=False, **params):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        os.write(self.to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            answer = self._message(deadline)
            if answer.get("id") == self.next_id:
                if "error" in answer:
                    raise ChromiumError(f"{method}: {answer['error'].get('message')}")
                return answer["result"]
            self.events.append(answer)

    events = []

    def load(self, url):
        """Navigate and wait for the load event."""
        self.events.clear()
        self.send("Page.navigate", session=True, url=url)
        deadline = time.monotonic() + self.timeout
        while not any(event.get("method") == "Page.loadEventFired" for event in self.events):
            self.events.append(self._message(deadline))

    def evaluate(self, expression):
        result = self.send("Runtime.evaluate", session=True, expression=expression, returnByValue=True)
        return result["result"].get("value")

    def close(self):
        self.process.kill()
        self.process.wait()
        os.close(self.to_browser)
        os.close(self.from_browser)
        shutil.rmtree(self.profile, ignore_errors=True)


def pages(site):
    return sorted(path for path in pathlib.Path(site).rglob("index.html") if "assets" not in path.parts)


def overflows(site):
    """{page path relative to the site: [overflowing element, ...]} of every page that does not fit."""
    site = pathlib.Path(site).resolve()
    browser = Browser()
    try:
        found = {}
        for page in pages(site):
            browser.load(page.as_uri())
            problems = browser.evaluate(MEASURE)
            if problems:
                found[page.relative_to(site).as_posix()] = problems
        return found
    finally:
        browser.close()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("site", nargs="?", default="site", help="the built site's folder (default site)")
    args = parser.parse_args(argv)
    if not pages(args.site):
        print(f"check_site_width: error: no pages under {args.site} (build it: python tools/build_docs.py)",
              file=sys.stderr)
        return 2
    try:
        found = overflows(args.site)
    except ChromiumError as error:
        print(f"check_site_width: error: {error}", file=sys.stderr)
        return 2
    for page, problems in found.items():
        for problem in problems:
            print(f"{page}: {problem['what']} under \"{problem['text']}\" is {problem['scroll']} px wide "
                  f"in {problem['client']} px")
    print(f"check_site_width: {len(pages(args.site))} pages at {WIDTH} px, {len(found)} with something too wide")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
