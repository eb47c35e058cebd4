-- wrk script for `make loadtest`, in one of three modes (PAYWARDEN_LOADTEST_MODE):
--   decrypt (default): POSTs unique pre-forged tokens to /v1/payment-tokens/decrypt with the API
--     key PAYWARDEN_LOADTEST_KEY, one per request, read line by line (thread N reads
--     PAYWARDEN_LOADTEST_LINES.N); a 200 is a decryption, anything else an error.
--   register: POSTs eProtect forms (one urlencoded body per line, read the same way) to
--     /eProtect/paypage; only a 200 whose body says "response":"870" is a registration (eProtect
--     answers failures with 200 too), and thread N writes each registration ID to
--     PAYWARDEN_LOADTEST_IDS.N.
--   redeem: redeems the registration IDs of PAYWARDEN_LOADTEST_LINES.N round-robin (a
--     registration may be redeemed again and again) with the redeem key PAYWARDEN_LOADTEST_KEY,
--     for wrk's duration; a 200 is a redemption.
-- In the first two modes, when the lines run out a connection sends nothing more (replay
-- protection stays on, so a token is never sent twice, and no filler request dilutes the latency
-- figures); the driver then stops wrk with SIGINT, and the rate is taken from the first request
-- to the last response, not over wrk's whole duration.
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

local mode = os.getenv("PAYWARDEN_LOADTEST_MODE") or "decrypt"
local counted = ({ decrypt = "decrypted", register = "registered", redeem = "redeemed" })[mode]
assert(counted, "PAYWARDEN_LOADTEST_MODE must be decrypt, register or redeem")
local key = os.getenv("PAYWARDEN_LOADTEST_KEY")
local headers = ({
  decrypt = { ["Authorization"] = "Bearer " .. (key or ""), ["Content-Type"] = "application/json" },
  register = { ["Content-Type"] = "application/x-www-form-urlencoded" },
  redeem = { ["Authorization"] = "Bearer " .. (key or "") },
})[mode]
local threads = {}
local lines, ids
-- Lines read by delay() and not yet sent by request(): several connections may be between the
-- two at once, so one variable would hand a line to two requests and none to another.
local queue, head, tail = {}, 1, 0
local registrationIDs, nextID = {}, 1
sent = 0
succeeded = 0
errors = 0
started = 0
finished = 0

function setup(thread)
  thread:set("index", #threads)
  table.insert(threads, thread)
end

function init(args)
  local path = os.getenv("PAYWARDEN_LOADTEST_LINES") .. "." .. index
  if mode == "redeem" then
    for line in io.lines(path) do table.insert(registrationIDs, line) end
    assert(#registrationIDs > 0, "no registration IDs in " .. path)
  else
    lines = io.open(path, "r")
  end
  if mode == "register" then ids = io.open(os.getenv("PAYWARDEN_LOADTEST_IDS") .. "." .. index, "w") end
end

-- wrk asks this before every request (only when the script defines it), and each 0 it returns is
-- followed by exactly one request(): no wait while lines are left, and once they are gone a wait
-- longer than any run, which idles the connection for good. Redemption reuses its lines, so it
-- leaves the function undefined and skips the timer per request.
if mode ~= "redeem" then
  function delay()
    local line = lines:read("*l")
    if line ~= nil then
      tail = tail + 1
      queue[tail] = line
      return 0
    end
    if ids ~= nil then ids:flush() end
    return 24 * 3600 * 1000
  end
end

function request()
  -- wrk calls this once more than it sends, in the first thread before any connection, to check
  -- the request parses: that call finds no line queued and gets one that costs no token.
  if mode ~= "redeem" and head > tail then return wrk.format("GET", "/healthz") end
  if started == 0 then started = now() end
  sent = sent + 1
  if mode == "redeem" then
    local id = registrationIDs[nextID]
    nextID = nextID % #registrationIDs + 1
    return wrk.format("POST", "/v1/registrations/" .. id .. "/redeem", headers)
  end
  local line = queue[head]
  queue[head] = nil
  head = head + 1
  if mode == "register" then return wrk.format("POST", "/eProtect/paypage", headers, line) end
  return wrk.format("POST", "/v1/payment-tokens/decrypt", headers, line)
end

function response(status, headers, body)
  local ok = status == 200
  if ok and mode == "register" then
    local id = body:match('"paypageRegistrationId":"(%d+)"')
    ok = id ~= nil and body:find('"response":"870"', 1, true) ~= nil
    if ok then ids:write(id, "\n") end
  end
  if ok then succeeded = succeeded + 1 else errors = errors + 1 end
  -- The first few failures of each thread, for the driver to show: a count alone says nothing of
  -- why. Failure bodies carry codes and reasons, never card data.
  if not ok and errors <= 3 then io.stderr:write("FAILED ", status, " ", body, "\n") end
  finished = now()
end

function done(summary, latency, requests)
  -- A request that never got its response (wrk timed it out, or the connection broke) never
  -- reached response(): it is an error too. A redemption run ends on wrk's clock with requests in
  -- flight, so there wrk's own read, write and timeout counts stand in; they are no use for the
  -- other modes, where wrk counts a connection idle for good as timed out.
  local ok, failed, first, last = 0, 0, nil, 0
  for _, thread in ipairs(threads) do
    ok = ok + thread:get("succeeded")
    failed = failed + thread:get("errors")
    if mode ~= "redeem" then failed = failed + thread:get("sent") - thread:get("succeeded") - thread:get("errors") end
    local s = thread:get("started")
    if first == nil or s < first then first = s end
    if thread:get("finished") > last then last = thread:get("finished") end
  end
  local seconds = last - first
  local e = summary.errors
  local socket = e.connect + (mode == "redeem" and e.read + e.write + e.timeout or 0)
  io.write(string.format("LOADTEST %s=%d errors=%d seconds=%.2f rate=%.0f p50=%.2f p90=%.2f p99=%.2f\n",
    counted, ok, failed + socket, seconds, ok / seconds, latency:percentile(50) / 1000, latency:percentile(90) / 1000,
    latency:percentile(99) / 1000))
end
