#!/usr/bin/env bash
# Where TTFT inflation comes from: a loopback packet capture (tshark) of one `speclens bench` run
# at concurrency 256 against the mock server with a 50 ms TTFT / 10 ms ITL, comparing three
# figures — the server's own mean TTFT (`GET /stats`), the wire's (each request segment to the
# first response segment at least 20 ms later on its connection, i.e. the first token after the
# response head), and the one speclens reports. The mock runs on core 0, speclens on core 1.
#
# Usage: bash perf/ttft_capture.sh [CONCURRENCY] [REQUESTS]   (needs tshark: apt install tshark)
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
cd "$ROOT"
C="${1:-256}"
N="${2:-1024}"
PORT=18703
command -v tshark >/dev/null || die "tshark is needed (apt-get install tshark)"
cargo build --release -q -p speclens || die "speclens did not build"
cargo build --release -q --manifest-path perf/mock_openai/Cargo.toml || die "the mock server did not build"
WORK="$(mktemp -d)"
taskset -c 0 perf/mock_openai/target/release/mock-openai --port "$PORT" --ttft-ms 50 --itl-ms 10 >/dev/null 2>&1 &
MOCK=$!
tshark -q -i lo -f "tcp port $PORT" -w "$WORK/cap.pcap" >/dev/null 2>&1 &
SHARK=$!
trap 'kill $MOCK $SHARK 2>/dev/null || true; rm -rf "$WORK"' EXIT
sleep 2
taskset -c 1 target/release/speclens bench --url "http://127.0.0.1:$PORT" --model mock --num-prompts "$N" \
  --concurrency "$C" --input-tokens 128 --output-tokens 128 --no-scrape --out "$WORK/run" >/dev/null 2>&1 \
  || die "the run failed"
curl -sf "http://127.0.0.1:$PORT/stats" >"$WORK/stats.json"
sleep 1
kill $SHARK
wait $SHARK 2>/dev/null || true
tshark -r "$WORK/cap.pcap" -Y "tcp.len>0" -T fields -e frame.time_epoch -e tcp.stream -e tcp.dstport \
  >"$WORK/segments.txt" 2>/dev/null
python3 - "$WORK" "$PORT" <<'PY'
import collections, json, statistics, sys
work, port = sys.argv[1], sys.argv[2]
streams = collections.defaultdict(list)
for line in open(f"{work}/segments.txt"):
    t, stream, dport = line.split()
    streams[stream].append((float(t), dport == port))
wire = []
for segs in streams.values():
    segs.sort()
    for i, (t, to_server) in enumerate(segs):
        if to_server:
            j = i + 1
            while j < len(segs) and (segs[j][1] or segs[j][0] - t < 0.02):
                j += 1
            if j < len(segs):
                wire.append((segs[j][0] - t) * 1e3)
client = [json.loads(l)["ttft_ms"] for l in open(f"{work}/run/records.jsonl")]
server = json.load(open(f"{work}/stats.json"))["mean_ttft_ms"]
print(f"server's own TTFT: mean {server:.2f} ms")
print(f"wire TTFT:         mean {statistics.mean(wire):.2f} ms, median {statistics.median(wire):.2f} ms ({len(wire)} requests)")
print(f"speclens TTFT:     mean {statistics.mean(client):.2f} ms, median {statistics.median(client):.2f} ms ({len(client)} requests)")
PY
