-- Read a reducer unit's view of its task in one atomic step: the task's backfill holds, its
-- rewinds, sources and liveness, and each bucket's seq/rseq; note how far the reader has merged
-- each bucket (the backpressure backlog counts only unmerged data sets).
-- KEYS[1] backfill holds hash, KEYS[2] rewinds hash, KEYS[3] sources hash, KEYS[4] live hash,
-- then per bucket i (from 1): KEYS[2 + 3i] seq, KEYS[3 + 3i] rseq, KEYS[4 + 3i] merged.
-- ARGV[i] bucket i's last merged data set ('' = do not note).
-- Returns {{holds field/value...}, {rewinds...}, {sources...}, {live...}, {seq, rseq, ...}}.
local counters = {}
for i = 1, #ARGV do
  local seq = tonumber(redis.call('GET', KEYS[2 + 3 * i]) or '0')
  local rseq = tonumber(redis.call('GET', KEYS[3 + 3 * i]) or '1')
  if ARGV[i] ~= '' then
    local merged = tonumber(ARGV[i])
    if merged <= seq and merged > tonumber(redis.call('GET', KEYS[4 + 3 * i]) or '0') then
      redis.call('SET', KEYS[4 + 3 * i], merged)
    end
  end
  counters[#counters + 1] = seq
  counters[#counters + 1] = rseq
end
return {
  redis.call('HGETALL', KEYS[1]),
  redis.call('HGETALL', KEYS[2]),
  redis.call('HGETALL', KEYS[3]),
  redis.call('HGETALL', KEYS[4]),
  counters,
}
