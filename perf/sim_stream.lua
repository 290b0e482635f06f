-- wrk script: streamed chat completions of 128 tokens (SSE, usage chunk) against `speclens sim`.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"messages":[{"role":"user","content":"Explain speculative decoding"}],"max_tokens":128,"ignore_eos":true,"temperature":0,"stream":true,"stream_options":{"include_usage":true}}'
