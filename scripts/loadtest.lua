-- wrk script for `make loadtest`: POSTs unique pre-forged tokens, one per request, read line by
-- line (thread N reads PAYWARDEN_LOADTEST_TOKENS.N), and counts decryptions and errors. When the tokens run
-- out it sends nothing more (replay protection stays on, so a token is never sent twice); the
-- driver then stops wrk with SIGINT, and the rate is taken from the first request to the last
-- token's response, not over wrk's whole duration.
local ffi = require("ffi")
ffi.cdef [[
  typedef struct { long tv_sec; long tv_nsec; } paywarden_timespec;
  int clock_gettime(int clock, paywarden_timespec *time);
]]
local function now()
  local t = ffi.new("paywarden_timespec")
  ffi.C.clock_gettime(1, t) -- CLOCK_MONOTONIC
  return tonumber(t.tv_sec) + tonumber(t.tv_nsec) / 1e9
end

local key = os.getenv("PAYWARDEN_LOADTEST_KEY")
local headers = { ["Authorization"] = "Bearer " .. key, ["Content-Type"] = "application/json" }
local threads = {}
local tokens
local exhausted = false
decrypted = 0
errors = 0
started = 0
finished = 0

function setup(thread)
  thread:set("index", #threads)
  table.insert(threads, thread)
end

function init(args)
  tokens = io.open(os.getenv("PAYWARDEN_LOADTEST_TOKENS") .. "." .. index, "r")
end

function request()
  if started == 0 then started = now() end
  local line = tokens:read("*l")
  if line == nil then
    exhausted = true
    return wrk.format("GET", "/healthz")
  end
  return wrk.format("POST", "/v1/payment-tokens/decrypt", headers, line)
end

function response(status, headers, body)
  if exhausted then return end
  if status == 200 then decrypted = decrypted + 1 else errors = errors + 1 end
  finished = now()
end

function done(summary, latency, requests)
  local ok, failed, first, last = 0, 0, nil, 0
  for _, thread in ipairs(threads) do
    ok = ok + thread:get("decrypted")
    failed = failed + thread:get("errors")
    local s = thread:get("started")
    if first == nil or s < first then first = s end
    if thread:get("finished") > last then last = thread:get("finished") end
  end
  local seconds = last - first
  io.write(string.format("LOADTEST decrypted=%d errors=%d seconds=%.2f rate=%.0f p50=%.2f p90=%.2f p99=%.2f\n",
    ok, failed, seconds, ok / seconds, latency:percentile(50) / 1000, latency:percentile(90) / 1000,
    latency:percentile(99) / 1000))
end
