-- Read one bucket's seq/rseq with the task's sources and liveness in one atomic step.
-- KEYS[1] seq, KEYS[2] rseq, KEYS[3] sources hash, KEYS[4] live hash.
-- Returns {seq, rseq, {sources field/value...}, {live field/value...}}.
local seq = tonumber(redis.call('GET', KEYS[1]) or '0')
local rseq = tonumber(redis.call('GET', KEYS[2]) or '1')
return {seq, rseq, redis.call('HGETALL', KEYS[3]), redis.call('HGETALL', KEYS[4])}
