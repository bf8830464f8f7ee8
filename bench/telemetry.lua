-- wrk script for POST /v1/telemetry: arguments after `--` are <samples per batch> <run id>; bench/lib.ts
-- puts the Authorization header in front of it and the RESULT report after it.
-- Every request holds new (installation, utc) keys, so rows are really inserted; each wrk thread
-- rotates over 16 installation ids of its own. Like live samples, each run's follow the runs before
-- (a million seconds apart) instead of landing among them, which only an offline cache upload does.
-- wrk shares the server's two cores, so a request costs it little: the ids, the request head and 16
-- variants of each sample's values are formatted once per run; a request only joins them around new
-- utc values (12 µs of wrk's user CPU a 10-sample request, 26-28 µs with every value formatted anew).
local nextThread = 0
function setup(thread)
  thread:set("threadIndex", nextThread)
  nextThread = nextThread + 1
end

wrk.headers["Content-Type"] = "application/json"
local VARIANTS = 16
local batchSize, run, head
local ids, values, parts = {}, {}, {}
local counter = 0

function init(args)
  batchSize = tonumber(args[1])
  run = tonumber(args[2])
  head = "POST /v1/telemetry HTTP/1.1\r\n"
  for name, value in pairs(wrk.headers) do
    head = head .. name .. ": " .. value .. "\r\n"
  end
  for installation = 0, VARIANTS - 1 do
    ids[installation] = string.format("%08x-0000-4000-8000-%04x%08x", run, threadIndex, installation)
  end
  -- Sample i of variant v: the values every field after utc takes, as a car would send them.
  for v = 0, VARIANTS - 1 do
    for i = 1, batchSize do
      local n = v * 7919 + i * 104729
      values[v * batchSize + i] = string.format(
        ',"soc":%.1f,"power":%.2f,"speed":%d,"lat":%.5f,"lon":%.5f,"elevation":%d,' ..
        '"is_charging":false,"ext_temp":%.1f,"batt_temp":%.1f,"odometer":%.1f}',
        20 + (n % 80), (n % 200) - 50.5, n % 130, 41 + (n % 1000) / 10000, 28 + (n % 997) / 10000,
        n % 300, 12.5, 25.5, 12000 + n % 10000)
    end
  end
end

function request()
  counter = counter + 1
  local installation = counter % 16
  local sequence = math.floor(counter / 16)
  local variant = sequence % VARIANTS
  local n = 0
  for i = 1, batchSize do
    parts[n + 1] = i == 1 and '{"utc":' or ',{"utc":'
    parts[n + 2] = 1000000000 + run * 1000000 + sequence * batchSize + i
    parts[n + 3] = values[variant * batchSize + i]
    n = n + 3
  end
  local body = '{"installationId":"' .. ids[installation] .. '","plannerSentUtc":0,"samples":[' ..
    table.concat(parts, "", 1, n) .. ']}'
  return head .. "Content-Length: " .. #body .. "\r\n\r\n" .. body
end
