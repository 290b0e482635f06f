#!/usr/bin/env python3
"""AIPerf 0.13.0's own metric code run on a fixed list of request records: the reference the
parity tests hold speclens's AIPerf figures to (tests/fixtures/captured_aiperf_0.13_reference_metrics.json
is its output on tests/fixtures/made_aiperf_reference_records.json).

Usage (the interpreter of scripts/aiperf.sh's virtual environment):
    bash scripts/aiperf.sh python scripts/aiperf_reference.py records.json            # JSON on stdout
    … records.json --no-window
    … records.json --per-chunk-usage
    … records.json --full-export out.json

A records file may open with `//` source lines, which are skipped.

Pipeline (no services, no ZMQ, no tokenizer, no network):
    our JSON record
      -> aiperf RequestRecord + ParsedResponseRecord (+ AioHttpTraceData)
      -> MetricRecordProcessor.process_record()       (per-record RECORD/AGGREGATE metrics,
                                                        exactly what each RecordProcessor does)
      -> MetricsAccumulator.process_record()           (the RecordsManager's column store)
      -> MetricsAccumulator.export_results(ctx)        (derived metrics, sweep/time-weighted
                                                        metrics, adj_*, credit latencies)
      -> MetricsJsonExporter._generate_content()       (the very code that writes
                                                        profile_export_aiperf.json)
    and prints {metric_tag: {unit, avg, min, max, p1..p99, std, count, sum}} taken from that
    generated profile_export_aiperf.json content (fields that AIPerf omits are omitted here too;
    non-finite values become null, as in AIPerf's export).

INPUT FORMAT (all times are integer nanoseconds on ONE clock; AIPerf uses wall-clock
time_ns for metadata and perf_counter_ns for latencies -- here both are the same value,
so every perf<->wall conversion is the identity):

{
  "phase": {"start_ns": int, "end_ns": int},   # optional. The profiling credit phase window.
        # In a live run AIPerf summarises with ExportContext(start_ns=phase start,
        # end_ns=phase requests_end_ns (= time the last credit came back)); that window
        # (a) is the time-weighting window of every sweep metric and (b) replaces
        # benchmark_duration as the denominator of request_throughput,
        # output_token_throughput, input_token_throughput, total_token_throughput.
        # Without "phase" (or with --no-window) the window is unbounded: sweep metrics are
        # weighted over [first sweep event, last sweep event] and the rates divide by
        # benchmark_duration (= max last-content-chunk time - min request start, over
        # SUCCESSFUL records only).
  "records": [
    {
      "request_start_ns": int,        # RequestRecord.timestamp_ns == start_perf_ns
      "request_end_ns": int | null,   # metadata.request_end_ns and RequestRecord.end_perf_ns.
                                      # Live AIPerf sets it to the time of the LAST RAW SSE
                                      # message (incl. usage-only / [DONE]), not the last
                                      # content chunk. Default: last chunk's perf_ns (or start).
      "credit_issued_ns": int | null, # optional -> credit_to_start_latency, effective_latency
      "chunks": [                     # streamed SSE messages, in arrival order
        {"perf_ns": int,
         "tokens": int}               # tokens > 0  => a content chunk (delta.content non-empty)
                                      # tokens == 0 => a non-content message (role-only,
                                      #   usage-only, ...): AIPerf drops it from
                                      #   content_responses (TTFT/ITL/ICL/request_latency
                                      #   ignore it) but it can still be the last raw message.
      ],
      "input_tokens": int | null,     # -> input_sequence_length (or error_isl on errors)
      "output_tokens": int | null,    # default: sum of chunk tokens. AIPerf never sees
                                      # per-chunk token counts, only this total (client
                                      # tokenizer over the joined text, or server usage).
      "error": null | "message",      # non-null => error record (responses dropped, only
                                      # ERROR_ONLY metrics: error_request_count, error_isl...)
      "http": {                       # optional AioHttpTraceData fields (same ns clock);
                                      # feeds http_req_*. Omit => http_req_* absent.
        "request_send_start_perf_ns": int, "request_send_end_perf_ns": int,
        "response_receive_start_perf_ns": int, "response_receive_end_perf_ns": int,
        "response_chunks_count": int, "response_bytes_total": int,
        "request_chunks_count": int, "request_bytes_total": int,
        "connection_pool_wait_start_perf_ns": int|null, "connection_pool_wait_end_perf_ns": int|null,
        "tcp_connect_start_perf_ns": int|null, "tcp_connect_end_perf_ns": int|null,
        "connection_reused_perf_ns": int|null,
        "dns_lookup_start_perf_ns": int|null, "dns_lookup_end_perf_ns": int|null,
        "dns_cache_hit_perf_ns": int|null, ...
      }
    }, ...
  ]
}

Flags:
  --per-chunk-usage   also set TokenCounts.first_content_chunk_tokens = tokens of the first
                      content chunk (what live AIPerf does with --per-chunk-usage when the
                      server reports cumulative usage per chunk); ITL then divides by
                      (osl - first_chunk_tokens) instead of (osl - 1).
  --no-window         ignore "phase" (unbounded export context).
  --full-export PATH  also write the complete generated profile_export_aiperf.json.
  --records-out PATH  also write per-record metric dicts (display units not applied; raw ns).

Validity rules AIPerf applies (mirrored here by calling its own create_error_from_invalid):
a non-error record needs >= 1 content chunk and request_start < request_end (strictly),
otherwise AIPerf turns it into an error record ("Invalid inference result").
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
import warnings

# No network: never let anything reach for the HF hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
warnings.filterwarnings("ignore")


def _build_run():
    """A BenchmarkRun equivalent to
    `aiperf profile --endpoint-type chat --streaming --tokenizer builtin ...`.
    Only cfg.endpoint (type/streaming/use_server_token_count), cfg.slos, cfg.accuracy,
    cfg.artifacts (slice_duration, summary) and the phase type matter for metrics."""
    from aiperf.cli_runner import _make_benchmark_run
    from aiperf.config.flags import CLIConfig
    from aiperf.config.flags.resolver import resolve_config
    from aiperf.config.loader import build_benchmark_plan

    cli = CLIConfig(
        model_names=["speclens-reference"],
        urls=["http://127.0.0.1:9"],
        endpoint_type="chat",
        streaming=True,
        tokenizer="builtin",  # never loaded on this path
    )
    plan = build_benchmark_plan(resolve_config(cli, None))
    return _make_benchmark_run(plan.configs[0], benchmark_id="speclens-ref")


def _to_aiperf_records(rec: dict, idx: int, per_chunk_usage: bool):
    from aiperf.common.enums import CreditPhase
    from aiperf.common.models import (
        AioHttpTraceData,
        ErrorDetails,
        ParsedResponse,
        ParsedResponseRecord,
        RequestRecord,
        TextResponseData,
    )
    from aiperf.common.models.record_models import (
        MetricRecordMetadata,
        RecordContext,
        SSEMessage,
        TokenCounts,
    )

    start = int(rec["request_start_ns"])
    chunks = rec.get("chunks") or []
    end = rec.get("request_end_ns")
    if end is None:
        end = int(chunks[-1]["perf_ns"]) if chunks else start
    end = int(end)

    ctx = RecordContext(
        credit_num=idx,
        credit_phase=CreditPhase.PROFILING,
        conversation_id=f"conv-{idx}",
        turn_index=0,
        x_request_id=f"req-{idx}",
        x_correlation_id=f"corr-{idx}",
        credit_issued_ns=rec.get("credit_issued_ns"),
    )
    trace = None
    if rec.get("http"):
        h = dict(rec["http"])
        h.setdefault("trace_type", "aiohttp")
        # identity perf<->wall mapping, like everything else here
        h.setdefault("reference_time_ns", start)
        h.setdefault("reference_perf_ns", start)
        trace = AioHttpTraceData(**h)

    err = rec.get("error")
    request = RequestRecord(
        request_info=ctx,
        model_name="speclens-reference",
        timestamp_ns=start,
        start_perf_ns=start,
        end_perf_ns=end,
        # raw messages: only their count/perf_ns matter for validity checks
        responses=[SSEMessage(perf_ns=int(c["perf_ns"])) for c in chunks],
        error=ErrorDetails(message=str(err), type="HarnessError") if err else None,
        trace_data=trace,
    )
    # Same order as InferenceResultParser.parse_request_record
    request.create_error_from_invalid()
    in_tok = rec.get("input_tokens")

    if request.has_error:
        parsed = ParsedResponseRecord(
            request=request, responses=[], token_counts=TokenCounts(input=in_tok)
        )
    else:
        responses = []
        for c in chunks:
            t = int(c.get("tokens", 1))
            data = TextResponseData(text="tok " * t) if t > 0 else None
            responses.append(ParsedResponse(perf_ns=int(c["perf_ns"]), data=data))
        out_tok = rec.get("output_tokens")
        if out_tok is None:
            out_tok = sum(int(c.get("tokens", 1)) for c in chunks) or None
        first_chunk_tokens = None
        if per_chunk_usage:
            first_chunk_tokens = next(
                (int(c["tokens"]) for c in chunks if int(c.get("tokens", 1)) > 0), None
            )
        parsed = ParsedResponseRecord(
            request=request,
            responses=responses,
            token_counts=TokenCounts(
                input=in_tok,
                output=out_tok,
                reasoning=None,
                first_content_chunk_tokens=first_chunk_tokens,
            ),
        )
        parsed.create_error_from_invalid()
        if parsed.has_error:  # e.g. no content chunk, or start >= end
            parsed = ParsedResponseRecord(
                request=parsed.request, responses=[], token_counts=TokenCounts(input=in_tok)
            )

    # RecordProcessor._create_metric_record_metadata: request_end_ns is the last RAW message
    # (or end_perf_ns, or start) mapped to wall clock; identity mapping here.
    last_raw = int(chunks[-1]["perf_ns"]) if chunks else None
    meta_end = last_raw or end or start
    if rec.get("request_end_ns") is not None:
        meta_end = int(rec["request_end_ns"])
    metadata = MetricRecordMetadata(
        session_num=idx,
        x_request_id=f"req-{idx}",
        x_correlation_id=f"corr-{idx}",
        conversation_id=f"conv-{idx}",
        turn_index=0,
        credit_issued_ns=rec.get("credit_issued_ns"),
        request_start_ns=start,
        request_ack_ns=None,
        request_end_ns=meta_end,
        worker_id="worker-0",
        record_processor_id="record-processor-0",
        benchmark_phase=CreditPhase.PROFILING,
    )
    return parsed, metadata


async def run(path: str, *, per_chunk_usage: bool, no_window: bool,
              full_export: str | None, records_out: str | None) -> dict:
    from aiperf.common.accumulator_protocols import ExportContext
    from aiperf.common.enums import CreditPhase
    from aiperf.common.models import ProfileResults
    from aiperf.exporters.exporter_config import ExporterConfig
    from aiperf.exporters.metrics_json_exporter import MetricsJsonExporter
    from aiperf.metrics.accumulator import MetricsAccumulator
    from aiperf.post_processors.metric_record_processor import MetricRecordProcessor

    with open(path) as f:
        doc = json.loads("".join(line for line in f if not line.startswith("//")))
    records = doc["records"] if isinstance(doc, dict) else doc
    phase = (doc.get("phase") if isinstance(doc, dict) else None) or {}
    if no_window:
        phase = {}

    bench_run = _build_run()
    processor = MetricRecordProcessor(run=bench_run)
    accumulator = MetricsAccumulator(run=bench_run)

    per_record = []
    n_ok = n_err = 0
    for i, rec in enumerate(records):
        parsed, metadata = _to_aiperf_records(rec, i, per_chunk_usage)
        mrd = await processor.process_record(parsed, metadata)
        await accumulator.process_record(mrd)
        n_err += mrd.error is not None
        n_ok += mrd.error is None
        per_record.append(
            {"index": i, "error": mrd.error.message if mrd.error else None,
             "request_start_ns": metadata.request_start_ns,
             "request_end_ns": metadata.request_end_ns,
             "metrics": {k: v for k, v in mrd.metrics.items()}}
        )

    ctx = ExportContext(
        start_ns=phase.get("start_ns"),
        end_ns=phase.get("end_ns"),
        phase=CreditPhase.PROFILING,
    )
    summary = await accumulator.export_results(ctx)

    starts = [r["request_start_ns"] for r in per_record]
    results = ProfileResults(
        records=list(summary.results.values()),
        completed=len(summary.results),
        start_ns=phase.get("start_ns") or min(starts),
        end_ns=phase.get("end_ns") or max(r["request_end_ns"] for r in per_record),
        successful_request_count=n_ok,
        error_request_count=n_err,
    )
    exporter = MetricsJsonExporter(
        ExporterConfig(results=results, cfg=bench_run.cfg, telemetry_results=None,
                       run=bench_run)
    )
    content = exporter._generate_content()
    if full_export:
        with open(full_export, "w") as f:
            f.write(content)
    if records_out:
        with open(records_out, "w") as f:
            json.dump(per_record, f, indent=1, default=str)

    exported = json.loads(content)
    metrics = {
        k: v for k, v in exported.items() if isinstance(v, dict) and "unit" in v
    }
    return dict(sorted(metrics.items()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("records")
    ap.add_argument("--per-chunk-usage", action="store_true")
    ap.add_argument("--no-window", action="store_true")
    ap.add_argument("--full-export")
    ap.add_argument("--records-out")
    a = ap.parse_args()
    logging.disable(logging.WARNING)
    out = asyncio.run(
        run(a.records, per_chunk_usage=a.per_chunk_usage, no_window=a.no_window,
            full_export=a.full_export, records_out=a.records_out)
    )
    json.dump(out, sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
