-- Write a reducer unit's figures, raise its absolute late count and add only the count's growth
-- to the task's `late_reducer` counter, so replays and retries never count twice. One round
-- trip: a unit publishes after every commit.
-- KEYS[1] reducer_stats, KEYS[2] stats; ARGV[1] late field, ARGV[2] new absolute late count,
-- ARGV[3..] the figures as field, value, field, value...
if #ARGV > 2 then
  redis.call('HSET', KEYS[1], unpack(ARGV, 3))
end
local old = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
local new = tonumber(ARGV[2])
if new > old then
  redis.call('HSET', KEYS[1], ARGV[1], new)
  redis.call('HINCRBY', KEYS[2], 'late_reducer', new - old)
end
return new
