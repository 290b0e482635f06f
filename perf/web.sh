#!/usr/bin/env bash
# Web app figures: the dashboard bundle's size as served (raw, gzip, brotli — what `speclens
# serve` sends for each Accept-Encoding), the time from navigation to the first chart in
# headless Chromium (cold profile each time), and the what-if chart's redraw time (state to
# pixels, about 1,200 points over five S(B) curves) as α changes.
#
# The page leaves the figures itself: a `speclens:first-chart` performance mark when it first
# draws a chart, and `data-redraw-ms` / `data-points` on the what-if canvas after each redraw.
# This script drives Chromium through chromedriver's WebDriver API (Python's standard library).
#
# Usage: bash perf/web.sh   (builds the release binary and the dashboard when missing)
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
cd "$ROOT"

say "building speclens (release) and the dashboard"
cargo build --release -q -p speclens || die "speclens did not build"
[ -f web/dist/index.html ] || trunk build --release || die "the dashboard did not build"
command -v chromedriver >/dev/null || bash scripts/setup.sh --browser

PORT=18951
DRIVER_PORT=18952
SPECLENS_WEB_DIR="$ROOT/web/dist" target/release/speclens serve --port "$PORT" >/dev/null 2>&1 &
SERVE_PID=$!
chromedriver --port="$DRIVER_PORT" >/dev/null 2>&1 &
DRIVER_PID=$!
trap 'kill $SERVE_PID $DRIVER_PID 2>/dev/null || true' EXIT
for _ in $(seq 50); do
  curl -sf "http://127.0.0.1:$PORT/" >/dev/null && curl -sf "http://127.0.0.1:$DRIVER_PORT/status" >/dev/null && break
  sleep 0.1
done

say "sizes as served"
printf '| file | raw | gzip | brotli |\n|---|---|---|---|\n'
for f in web/dist/*.wasm web/dist/*.js; do
  name="$(basename "$f")"
  size() { curl -sf -H "Accept-Encoding: $1" -o /dev/null -w '%{size_download}' "http://127.0.0.1:$PORT/$name"; }
  printf '| `%s` | %s B | %s B | %s B |\n' "$name" "$(size identity)" "$(size gzip)" "$(size br)"
done

say "navigation to first chart, and what-if redraws (headless Chromium)"
python3 - "$PORT" "$DRIVER_PORT" <<'PY'
import json, statistics, sys, tempfile, time, urllib.request

port, driver = sys.argv[1], sys.argv[2]
base = f"http://127.0.0.1:{driver}"

def call(method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.load(r)["value"]

def session():
    args = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--no-first-run", "--window-size=1280,1600", "--force-device-scale-factor=1",
            f"--user-data-dir={tempfile.mkdtemp(prefix='speclens-web-')}"]
    caps = {"capabilities": {"alwaysMatch": {"goog:chromeOptions": {"binary": "/usr/bin/chromium", "args": args}}}}
    return call("POST", "/session", caps)["sessionId"]

def run(sid, script, args=()):
    return call("POST", f"/session/{sid}/execute/sync", {"script": script, "args": list(args)})

def run_async(sid, script, args=()):
    return call("POST", f"/session/{sid}/execute/async", {"script": script, "args": list(args)})

first_chart = "return (performance.getEntriesByName('speclens:first-chart')[0] || {}).startTime ?? null;"
url = f"http://127.0.0.1:{port}/#whatif"

def load(sid):
    """Navigate to the what-if page; its first-chart mark (ms since navigation), or None."""
    call("POST", f"/session/{sid}/url", {"url": url})
    for _ in range(300):
        t = run(sid, first_chart)
        if t is not None:
            return t
        time.sleep(0.05)
    return None

# Cold: a new browser profile (empty cache) for each navigation.
cold = []
for _ in range(5):
    sid = session()
    call("POST", f"/session/{sid}/timeouts", {"script": 60000})
    cold.append(load(sid))
    call("DELETE", f"/session/{sid}")

# Warm, and the redraws, in one session.
sid = session()
call("POST", f"/session/{sid}/timeouts", {"script": 120000})
warm = []
for _ in range(5):
    call("POST", f"/session/{sid}/url", {"url": "about:blank"})
    warm.append(load(sid))

redraw = r"""
const done = arguments[arguments.length - 1];
const input = document.getElementById('alpha');
const canvas = document.getElementById('speedup-chart');
const times = [];
let points = 0;
(async () => {
  for (let i = 0; i < 100; i++) {
    const before = canvas.dataset.draws;
    input.value = (0.50 + 0.004 * i).toFixed(3);
    input.dispatchEvent(new Event('input', { bubbles: true }));
    for (let w = 0; w < 200 && canvas.dataset.draws === before; w++) await new Promise(r => setTimeout(r, 1));
    times.push(parseFloat(canvas.dataset.redrawMs));
    points = parseInt(canvas.dataset.points);
    await new Promise(r => setTimeout(r, 5));
  }
  done({ times, points });
})();
"""
out = run_async(sid, redraw)
call("DELETE", f"/session/{sid}")

def fmt(xs):
    xs = sorted(x for x in xs if x is not None)
    return f"median {statistics.median(xs):.1f} ms (min {xs[0]:.1f}, max {xs[-1]:.1f}; {len(xs)} loads)"

times = sorted(out["times"])
p = lambda q: times[min(len(times) - 1, int(q * len(times)))]
print()
print(f"navigation to first chart, cold profile: {fmt(cold)}")
print(f"navigation to first chart, warm cache:   {fmt(warm)}")
print(f"what-if redraw ({out['points']} points, {len(times)} changes of alpha): "
      f"median {statistics.median(times):.2f} ms, p90 {p(0.9):.2f} ms, max {times[-1]:.2f} ms")
PY
