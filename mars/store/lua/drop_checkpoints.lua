-- Delete a unit's checkpoints numbered below ARGV[1] (older ones, and those a crashed or fenced
-- owner wrote but never committed). Fields are `<number>:<token>`.
-- KEYS[1] the unit's checkpoint hash. Returns the number of fields deleted.
local keep_from = tonumber(ARGV[1])
local dropped = {}
for _, field in ipairs(redis.call('HKEYS', KEYS[1])) do
  local number = tonumber(string.match(field, '^(%d+):'))
  if number == nil or number < keep_from then dropped[#dropped + 1] = field end
end
if #dropped > 0 then redis.call('HDEL', KEYS[1], unpack(dropped)) end
return #dropped
