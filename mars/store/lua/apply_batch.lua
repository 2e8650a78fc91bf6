-- Apply one batch of one writer atomically (see docs/protocol.md).
--
-- KEYS[1] sources hash, KEYS[2] stats hash, KEYS[3..] the seq counter of each written bucket.
-- ARGV: now_ms,
--       n_expected, then n_expected x (source field, expected applied offset),
--       n_sources,  then n_sources  x (source field, new applied offset, stream time or ''),
--       then for each KEYS[3..]: (data set key prefix, data set bytes),
--       n_counters, then n_counters x (counter name, delta).
-- Returns {1, seq...} (APPLIED, one seq per KEYS[3..]) or
--         {0, field, packed state or '', ...} (REJECTED: nothing written).

local src, stats = KEYS[1], KEYS[2]
local now = ARGV[1]
local i = 2

local function offset_of(packed)
  if not packed then return '-1' end
  return string.match(packed, '^(-?%d+):')
end

-- 1. Check: every expected source is exactly where the writer believes it is.
local n_expected = tonumber(ARGV[i]); i = i + 1
local expected_fields = {}
local mismatch = false
for _ = 1, n_expected do
  local field, expected = ARGV[i], ARGV[i + 1]; i = i + 2
  expected_fields[#expected_fields + 1] = field
  if offset_of(redis.call('HGET', src, field)) ~= expected then mismatch = true end
end
if mismatch then
  local reply = {0}
  local current = redis.call('HMGET', src, unpack(expected_fields))
  for j, field in ipairs(expected_fields) do
    reply[#reply + 1] = field
    reply[#reply + 1] = current[j] or ''
  end
  return reply
end

-- 2. Advance the sources; stream time never moves back, last data time follows the offset.
local n_sources = tonumber(ARGV[i]); i = i + 1
for _ = 1, n_sources do
  local field, offset, stream_time = ARGV[i], ARGV[i + 1], ARGV[i + 2]; i = i + 3
  local old = redis.call('HGET', src, field)
  local old_offset, old_stream, old_last = '-1', '', ''
  if old then old_offset, old_stream, old_last = string.match(old, '^(-?%d+):(-?%d*):(-?%d*)$') end
  if stream_time == '' or (old_stream ~= '' and tonumber(old_stream) > tonumber(stream_time)) then
    stream_time = old_stream
  end
  local last = old_last
  if offset ~= old_offset then last = now end
  redis.call('HSET', src, field, offset .. ':' .. stream_time .. ':' .. last)
end

-- 3. Number and store the data sets: INCR gives each one the next seq, no hole, no reuse.
local reply = {1}
for k = 3, #KEYS do
  local prefix, data = ARGV[i], ARGV[i + 1]; i = i + 2
  local seq = redis.call('INCR', KEYS[k])
  redis.call('SET', prefix .. seq, data)
  reply[#reply + 1] = seq
end

-- 4. Counters.
local n_counters = tonumber(ARGV[i]); i = i + 1
for _ = 1, n_counters do
  redis.call('HINCRBY', stats, ARGV[i], ARGV[i + 1]); i = i + 2
end
redis.call('HINCRBY', stats, 'batches', 1)
if #KEYS > 2 then redis.call('HINCRBY', stats, 'datasets', #KEYS - 2) end
return reply
