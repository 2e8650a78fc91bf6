-- Move a bucket's rseq forward (never back) and delete the data sets below it.
-- KEYS[1] seq, KEYS[2] rseq, KEYS[3] data sets hash. ARGV[1] new rseq.
-- Returns the effective rseq, or an error when asked to release data sets never written.
local seq = tonumber(redis.call('GET', KEYS[1]) or '0')
local old = tonumber(redis.call('GET', KEYS[2]) or '1')
local new = tonumber(ARGV[1])
if new > seq + 1 then
  return redis.error_reply('ERR mars: release to ' .. new .. ' beyond seq ' .. seq)
end
if new <= old then return old end
redis.call('SET', KEYS[2], new)
local batch = {}
for s = old, new - 1 do
  batch[#batch + 1] = s
  if #batch == 500 then redis.call('HDEL', KEYS[3], unpack(batch)); batch = {} end
end
if #batch > 0 then redis.call('HDEL', KEYS[3], unpack(batch)) end
return new
