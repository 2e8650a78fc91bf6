-- Read one bucket's seq/rseq with the task's sources and liveness in one atomic step, and note
-- how far the reader has merged (the backpressure backlog counts only unmerged data sets).
-- KEYS[1] seq, KEYS[2] rseq, KEYS[3] sources hash, KEYS[4] live hash, KEYS[5] merged.
-- ARGV[1] the reader's last merged data set ('' = do not note).
-- Returns {seq, rseq, {sources field/value...}, {live field/value...}}.
local seq = tonumber(redis.call('GET', KEYS[1]) or '0')
local rseq = tonumber(redis.call('GET', KEYS[2]) or '1')
if ARGV[1] ~= '' then
  local merged = tonumber(ARGV[1])
  if merged <= seq and merged > tonumber(redis.call('GET', KEYS[5]) or '0') then
    redis.call('SET', KEYS[5], merged)
  end
end
return {seq, rseq, redis.call('HGETALL', KEYS[3]), redis.call('HGETALL', KEYS[4])}
