-- Start a new bucket-layout epoch of one task (mars/tasks/bucket_layout.py, docs/protocol.md).
--
-- KEYS[1] layout hash. ARGV: the generation the caller read, the new bucket count.
-- The new epoch starts after every window any writer has written (`last_window`, noted by
-- apply_batch.lua) and after the previous epoch's start, so no data set of a window in it was
-- written under the old count; from now on apply_batch refuses a writer on the old generation
-- for any window from there on.
-- Returns {1, generation, from, buckets} (CHANGED) or, when the caller's generation is not
-- the current one, {0, generation, from or '', buckets or ''} (nothing changed).

local layout = KEYS[1]
local expected, buckets = tonumber(ARGV[1]), ARGV[2]
local gen = tonumber(redis.call('HGET', layout, 'generation') or '0')
if gen ~= expected then
  return {0, gen, redis.call('HGET', layout, 'from:' .. gen) or '',
          redis.call('HGET', layout, 'buckets:' .. gen) or ''}
end
local previous = tonumber(redis.call('HGET', layout, 'from:' .. gen) or '-9007199254740992')
local from = previous + 1
local last = redis.call('HGET', layout, 'last_window')
if last and tonumber(last) + 1 > from then from = tonumber(last) + 1 end
local text = string.format('%.0f', from)
redis.call('HSET', layout, 'generation', gen + 1, 'from:' .. (gen + 1), text,
           'buckets:' .. (gen + 1), buckets)
return {1, gen + 1, text, buckets}
