-- wrk script: non-streamed chat completions of 128 tokens against `speclens sim`.
-- Used by the sim's capacity figure in docs/PERFORMANCE.md.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"messages":[{"role":"user","content":"Explain speculative decoding"}],"max_tokens":128,"ignore_eos":true,"temperature":0}'
