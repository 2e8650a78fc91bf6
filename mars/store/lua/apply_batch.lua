-- Apply one batch of one writer atomically (see docs/protocol.md).
--
-- KEYS[1] sources hash, KEYS[2] stats hash, KEYS[3] layout hash, KEYS[4] key clocks hash,
-- KEYS[5..] per written bucket, its seq counter then its data sets hash (every key the script
-- touches is declared: Redis Cluster).
-- ARGV: now_ms,
--       the writer's layout generation, its current epoch's first window start,
--       the latest window start of its data sets ('' when there are none),
--       n_expected, then n_expected x (source field, expected applied offset),
--       n_sources,  then n_sources  x (source field, new applied offset, stream time or ''),
--       then per written bucket: its data set bytes,
--       n_counters, then n_counters x (counter name, delta),
--       then the written channel and the task id: published once the batch is applied,
--       n_clocks, then n_clocks x (source field, its key clocks): stored with the offsets.
-- Returns {1, seq...} (APPLIED, one seq per written bucket),
--         {0, field, packed state or '', ...} (REJECTED: nothing written), or
--         {2, generation} (LAYOUT CHANGED: the writer's bucket layout is stale for a window
--         of this batch; nothing written).

local src, stats, layout = KEYS[1], KEYS[2], KEYS[3]
local now = ARGV[1]
local writer_gen, writer_from, last_window = tonumber(ARGV[2]), ARGV[3], ARGV[4]
local i = 5

-- 0. The bucket-layout fence (mars/tasks/bucket_layout.py): a writer on generation g routes
-- windows before the start of epoch g + 1 right, and no others.
local gen = tonumber(redis.call('HGET', layout, 'generation') or '0')
if last_window ~= '' and writer_gen < gen then
  -- (An epoch Redis knows only by a writer's restore has no start: refuse, to be safe.)
  local next_from = tonumber(redis.call('HGET', layout, 'from:' .. (writer_gen + 1)) or '')
  if not next_from or tonumber(last_window) >= next_from then return {2, gen} end
end

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

-- 3. Note the latest window written: a layout change starts after it (change_layout.lua).
if last_window ~= '' then
  if writer_gen > gen then
    -- Redis lost the change (a restart without its last writes): the writer knows it.
    redis.call('HSET', layout, 'generation', writer_gen, 'from:' .. writer_gen, writer_from)
  end
  local seen = redis.call('HGET', layout, 'last_window')
  if not seen or tonumber(seen) < tonumber(last_window) then
    redis.call('HSET', layout, 'last_window', last_window)
  end
end

-- 4. Number and store the data sets: INCR gives each one the next seq, no hole, no reuse.
local reply = {1}
local n_buckets = (#KEYS - 4) / 2
for k = 5, #KEYS, 2 do
  local seq = redis.call('INCR', KEYS[k])
  redis.call('HSET', KEYS[k + 1], seq, ARGV[i]); i = i + 1
  reply[#reply + 1] = seq
end

-- 5. Counters.
local n_counters = tonumber(ARGV[i]); i = i + 1
for _ = 1, n_counters do
  redis.call('HINCRBY', stats, ARGV[i], ARGV[i + 1]); i = i + 2
end
redis.call('HINCRBY', stats, 'batches', 1)
if n_buckets > 0 then redis.call('HINCRBY', stats, 'datasets', n_buckets) end

-- 6. Key clocks (watermark = 'key'), with the offsets they go with.
local n_clocks = tonumber(ARGV[i + 2] or '0')
for j = 1, n_clocks do
  redis.call('HSET', KEYS[4], ARGV[i + 1 + 2 * j], ARGV[i + 2 + 2 * j])
end

-- 7. Wake the task's reducer owners (a hint: owners also poll, so a lost message costs time only).
redis.call('PUBLISH', ARGV[i], ARGV[i + 1])
return reply
