-- Raise a reducer unit's absolute late count and add only its growth to the task's
-- `late_reducer` counter, so replays and retries never count twice.
-- KEYS[1] reducer_stats, KEYS[2] stats; ARGV[1] field, ARGV[2] new absolute late count.
local old = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
local new = tonumber(ARGV[2])
if new > old then
  redis.call('HSET', KEYS[1], ARGV[1], new)
  redis.call('HINCRBY', KEYS[2], 'late_reducer', new - old)
end
return new
