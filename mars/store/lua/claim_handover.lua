-- KEYS[1] src hash, KEYS[2] handover hash; ARGV: n x (partition, proposed end, seeded state).
-- Returns per partition the recorded hand-over offset, or '' when live mappers own it already.
local reply = {}
for i = 1, #ARGV, 3 do
  local partition, proposed, seed = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local recorded = redis.call('HGET', KEYS[2], partition)
  if not recorded and redis.call('HEXISTS', KEYS[1], partition) == 0 then
    redis.call('HSET', KEYS[1], partition, seed)
    redis.call('HSET', KEYS[2], partition, proposed)
    recorded = proposed
  end
  reply[#reply + 1] = recorded or ''
end
return reply
