-- wrk script for `make loadtest`, in one of five modes (PAYWARDEN_LOADTEST_MODE):
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
--   relay: POSTs a cnpAPI authorization for each registration ID of PAYWARDEN_LOADTEST_LINES.N
--     (one each: a relayed registration is ended) to /vap/communicator/online as the user
--     PAYWARDEN_LOADTEST_USER with the key PAYWARDEN_LOADTEST_KEY, for merchantId
--     PAYWARDEN_LOADTEST_MERCHANT; only a 200 with the upstream's approval (000) and a cnpToken
--     is a relayed authorization.
--   baseline: POSTs the decrypt mode's lines, round-robin from the first 10,000 of each thread,
--     to the same path for wrk's duration: the body sizes of the decrypt run, to `paywarden-bench
--     http-baseline`, which answers any POST; a 200 counts.
-- Every LOADTEST line also gives the size of the last successful response body (bytes=).
-- In the decrypt, register and relay modes, when the lines run out a connection sends nothing more (replay
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
local counted = ({
  decrypt = "decrypted", register = "registered", redeem = "redeemed", relay = "relayed", baseline = "answered",
})[mode]
assert(counted, "PAYWARDEN_LOADTEST_MODE must be decrypt, register, redeem, relay or baseline")
-- Modes that reuse their lines for wrk's whole duration, rather than send each once.
local repeating = mode == "redeem" or mode == "baseline"
local key = os.getenv("PAYWARDEN_LOADTEST_KEY")
local headers = ({
  decrypt = { ["Authorization"] = "Bearer " .. (key or ""), ["Content-Type"] = "application/json" },
  register = { ["Content-Type"] = "application/x-www-form-urlencoded" },
  redeem = { ["Authorization"] = "Bearer " .. (key or "") },
  relay = { ["Content-Type"] = "text/xml" },
})[mode]
if mode == "baseline" then headers = { ["Content-Type"] = "application/json" } end
local relayUser = os.getenv("PAYWARDEN_LOADTEST_USER") or ""
local relayMerchant = os.getenv("PAYWARDEN_LOADTEST_MERCHANT") or ""
local function cnpAuthorization(id)
  return '<?xml version="1.0" encoding="UTF-8"?><cnpOnlineRequest version="12.10" xmlns="http://www.vantivcnp.com/schema"'
    .. ' merchantId="' .. relayMerchant .. '"><authentication><user>' .. relayUser .. '</user><password>' .. (key or "")
    .. '</password></authentication><authorization id="a' .. id .. '" reportGroup="loadtest" customerId="c1"><orderId>o-'
    .. id .. '</orderId><amount>1999</amount><orderSource>applepay</orderSource><paypage><paypageRegistrationId>' .. id
    .. '</paypageRegistrationId></paypage></authorization></cnpOnlineRequest>'
end
local threads = {}
local lines, ids
-- Lines read by delay() and not yet sent by request(): several connections may be between the
-- two at once, so one variable would hand a line to two requests and none to another.
local queue, head, tail = {}, 1, 0
local registrationIDs, nextID = {}, 1
bodyBytes = 0
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
  if repeating then
    for line in io.lines(path) do
      table.insert(registrationIDs, line)
      if mode == "baseline" and #registrationIDs == 10000 then break end
    end
    assert(#registrationIDs > 0, "no lines in " .. path)
  else
    lines = io.open(path, "r")
  end
  if mode == "register" then ids = io.open(os.getenv("PAYWARDEN_LOADTEST_IDS") .. "." .. index, "w") end
end

-- wrk asks this before every request (only when the script defines it), and each 0 it returns is
-- followed by exactly one request(): no wait while lines are left, and once they are gone a wait
-- longer than any run, which idles the connection for good. The repeating modes reuse their
-- lines, so they leave the function undefined and skip the timer per request.
if not repeating then
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
  if not repeating and head > tail then return wrk.format("GET", "/healthz") end
  if started == 0 then started = now() end
  sent = sent + 1
  if repeating then
    local line = registrationIDs[nextID]
    nextID = nextID % #registrationIDs + 1
    if mode == "baseline" then return wrk.format("POST", "/v1/payment-tokens/decrypt", headers, line) end
    return wrk.format("POST", "/v1/registrations/" .. line .. "/redeem", headers)
  end
  local line = queue[head]
  queue[head] = nil
  head = head + 1
  if mode == "register" then return wrk.format("POST", "/eProtect/paypage", headers, line) end
  if mode == "relay" then return wrk.format("POST", "/vap/communicator/online", headers, cnpAuthorization(line)) end
  return wrk.format("POST", "/v1/payment-tokens/decrypt", headers, line)
end

function response(status, headers, body)
  local ok = status == 200
  if ok and mode == "register" then
    local id = body:match('"paypageRegistrationId":"(%d+)"')
    ok = id ~= nil and body:find('"response":"870"', 1, true) ~= nil
    if ok then ids:write(id, "\n") end
  elseif ok and mode == "relay" then
    ok = body:find("<response>000</response>", 1, true) ~= nil and body:find("<cnpToken>", 1, true) ~= nil
  end
  if ok then
    succeeded = succeeded + 1
    bodyBytes = #body
  else
    errors = errors + 1
  end
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
  local ok, failed, first, last, bytes = 0, 0, nil, 0, 0
  for _, thread in ipairs(threads) do
    ok = ok + thread:get("succeeded")
    failed = failed + thread:get("errors")
    bytes = math.max(bytes, thread:get("bodyBytes"))
    if not repeating then failed = failed + thread:get("sent") - thread:get("succeeded") - thread:get("errors") end
    local s = thread:get("started")
    if first == nil or s < first then first = s end
    if thread:get("finished") > last then last = thread:get("finished") end
  end
  local seconds = last - first
  local e = summary.errors
  local socket = e.connect + (repeating and e.read + e.write + e.timeout or 0)
  io.write(string.format("LOADTEST %s=%d errors=%d seconds=%.2f rate=%.0f p50=%.2f p90=%.2f p99=%.2f bytes=%d\n",
    counted, ok, failed + socket, seconds, ok / seconds, latency:percentile(50) / 1000, latency:percentile(90) / 1000,
    latency:percentile(99) / 1000, bytes))
end
