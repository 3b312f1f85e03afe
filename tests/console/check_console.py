#!/usr/bin/env python3
"""Drives idgate's operator console in headless Chromium (selenium + chromedriver) and checks
what tests/console.rs set up: every section with the right figures, the migration's bar moving,
a backend the test stops turning red within one refresh, valid HTML, no script errors.

Talks to the Rust test on stdout/stdin: prints `STOP <backend>` and waits for a line back once
the backend is down. Any failed check raises (exit status 1, the reason on stderr)."""

import argparse
import json
import sys
import time
import urllib.request

import html5lib
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

SECTIONS = ["generators", "backends", "traffic", "migrations", "sessions", "about"]


def say(line):
    print(line, flush=True)


def get(url):
    with urllib.request.urlopen(url, timeout=20) as r:
        assert r.status == 200, f"{url}: HTTP {r.status}"
        ctype = r.headers.get("content-type", "")
        assert ctype.startswith("text/html"), f"{url}: content-type {ctype}"
        return r.read().decode("utf-8")


def check_html(base):
    """The page and every fragment parse without a single HTML parse error."""
    parser = html5lib.HTMLParser(strict=True)
    page = get(base + "/")
    try:
        parser.parse(page)
    except html5lib.html5parser.ParseError as e:
        raise AssertionError(f"the page is not valid HTML: {e}") from e
    for s in SECTIONS:
        fragment = get(f"{base}/console/section/{s}")
        try:
            html5lib.HTMLParser(strict=True).parseFragment(fragment, container="section")
        except html5lib.html5parser.ParseError as e:
            raise AssertionError(f"section {s} is not valid HTML: {e}") from e
    return len(page)


def until(what, limit, f, every=0.1):
    """f() until it is truthy (returned) or `limit` seconds pass (raises naming `what`)."""
    t0 = time.monotonic()
    last = None
    while time.monotonic() - t0 < limit:
        try:
            v = f()
            if v:
                return v
            last = v
        except Exception as e:  # an element replaced by a refresh mid-read
            last = e
        time.sleep(every)
    raise AssertionError(f"{what} not seen within {limit} s (last: {last!r})")


def text_of(d, css):
    els = d.find_elements(By.CSS_SELECTOR, css)
    return els[0].text.strip() if els else None


def attr_of(d, css, name):
    els = d.find_elements(By.CSS_SELECTOR, css)
    return els[0].get_attribute(name) if els else None


def main():
    a = argparse.ArgumentParser()
    a.add_argument("--url", required=True)
    a.add_argument("--drawn", type=int, required=True, help="ids the test drew from `drawn`")
    a.add_argument("--version", required=True)
    a.add_argument("--table", required=True, help="schema.table being migrated")
    a.add_argument("--idle-user", required=True)
    a.add_argument("--idle-sessions", type=int, required=True)
    a.add_argument("--stop", required=True, help="the backend the test stops")
    a.add_argument("--red-within", type=float, required=True)
    a.add_argument("--screenshot", required=True)
    args = a.parse_args()
    base = args.url.rstrip("/")

    page_bytes = check_html(base)

    opts = Options()
    opts.binary_location = "/usr/bin/chromium"
    for flag in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1400,1000", "--disable-extensions", "--no-first-run"]:
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(service=Service(executable_path="/usr/bin/chromedriver"), options=opts)
    try:
        d.set_page_load_timeout(30)
        d.get(base + "/")
        assert d.title == "idgate console", d.title
        for s in SECTIONS:
            assert d.find_elements(By.CSS_SELECTOR, f"section#{s} h2"), f"no section {s}"

        # Generators: the figure the test drew, the segment buffers, the snowflake's worker.
        ids = text_of(d, 'tr[data-generator="drawn"] td.ids')
        assert ids == str(args.drawn), f"drawn: ids issued {ids}, the test drew {args.drawn}"
        for which in ["current", "standby"]:
            css = f'tr[data-generator="drawn"] .buf.{which} .bar'
            assert d.find_elements(By.CSS_SELECTOR, css), f"no {which} buffer bar"
        cur = text_of(d, 'tr[data-generator="drawn"] .buf.current .nums')
        assert any(w in cur for w in ["next fetch at", "fetching", "next range ready"]), cur
        snow = text_of(d, 'tr[data-generator="snow"]')
        assert "worker id" in snow and "clock" in snow, snow
        # The rate comes from the sampler's second reading.
        until("the generator's rate", 10,
              lambda: text_of(d, 'tr[data-generator="drawn"] td.rate') not in (None, "–"))

        # Backends: both up and /ready green.
        for b in ["shard0", args.stop]:
            cls = attr_of(d, f'tr[data-backend="{b}"]', "class")
            assert cls == "ok", f"backend {b}: class {cls}"
        assert text_of(d, "#ready-state") == "ready", text_of(d, "#ready-state")
        ping = text_of(d, 'tr[data-backend="shard0"] td.ping')
        assert ping.startswith("ping "), ping

        # Traffic: the relayed statements the test ran, charted.
        until("a relayed-statements chart", 15,
              lambda: d.find_elements(By.CSS_SELECTOR, 'tr[data-route="relayed"] svg polyline'))
        assert d.find_elements(By.CSS_SELECTOR, 'tr[data-route="all"] svg'), "no total chart"
        # Its scale: the busiest sample's rate, at least one statement a second.
        scale = text_of(d, 'tr[data-route="relayed"] svg text')
        assert scale.endswith("/s") and float(scale[:-2]) >= 1.0, f"relayed chart scale {scale}"

        # Sessions: the idle sessions the test holds, and its slow statement.
        n = text_of(d, f'tr[data-user="{args.idle_user}"][data-state="Sleep"] td.count')
        assert n == str(args.idle_sessions), f"{args.idle_user} idle sessions: {n}"
        slow = text_of(d, "table.slow")
        assert slow and "SELECT SLEEP(?)" in slow, slow

        # About.
        assert text_of(d, "#version") == args.version, text_of(d, "#version")

        # Migrations: still copying, and the copied rows move between two reads.
        row = f'tr[data-table="{args.table}"]'
        phase = text_of(d, f"{row} td.phase")
        assert phase == "copying", f"phase {phase}"
        first = int(attr_of(d, f"{row} td.copied", "data-rows"))
        bar_first = attr_of(d, f"{row} progress", "value")
        second = until("the migration's bar moving", 30,
                       lambda: (lambda v: v if v > first else 0)(
                           int(attr_of(d, f"{row} td.copied", "data-rows"))))
        bar_second = attr_of(d, f"{row} progress", "value")
        assert bar_second is not None and 0 <= int(bar_second) <= 100, bar_second
        eta = text_of(d, f"{row} td.eta")

        # A full-page screenshot while everything is up.
        height = d.execute_script("return document.documentElement.scrollHeight")
        d.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
            "width": 1400, "height": min(int(height), 4000), "deviceScaleFactor": 1,
            "mobile": False})
        time.sleep(0.3)
        d.save_screenshot(args.screenshot)
        d.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})

        # A backend stopped: its row and its /ready check turn red within one refresh.
        say(f"STOP {args.stop}")
        assert sys.stdin.readline().strip() == "stopped", "the test did not stop the backend"
        t0 = time.monotonic()
        until(f"backend {args.stop} red", args.red_within,
              lambda: attr_of(d, f'tr[data-backend="{args.stop}"]', "class") == "bad", 0.05)
        red_after = time.monotonic() - t0
        cls = attr_of(d, f'li[data-check="backend {args.stop}"]', "class")
        assert cls == "bad", f"/ready check of {args.stop}: class {cls}"
        assert text_of(d, "#ready-state") == "not ready", text_of(d, "#ready-state")
        assert attr_of(d, 'tr[data-backend="shard0"]', "class") == "ok", "shard0 went red too"

        # No script errors (a failed fetch or resource would be logged as SEVERE too).
        errors = [e for e in d.get_log("browser") if e.get("level") == "SEVERE"]
        assert not errors, f"browser console errors: {errors}"
        say("RESULT " + json.dumps({
            "page_bytes": page_bytes,
            "copied": [first, second],
            "bar": [bar_first, bar_second],
            "eta": eta,
            "red_after_s": round(red_after, 2),
        }))
    finally:
        d.quit()


if __name__ == "__main__":
    main()
