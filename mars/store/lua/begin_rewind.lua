-- Begin rewind generation g of one task (mars/store/rewinds.py, docs/rewind.md).
--
-- KEYS[1] sources hash, KEYS[2] rewinds hash, KEYS[3] backfill holds hash,
-- KEYS[4..] the seq counter of every bucket 0..n-1.
-- ARGV: now_ms, first rewound window start (T'), the `from` time, then per partition 0..m-1
-- the offset the re-read starts at.
-- In one atomic step: g = the last generation + 1; per partition the hand-over offset
-- H[p] = its applied offset + 1 (records below were counted once live, those from H[p] on
-- are not yet: the re-read covers [start, H[p])); per bucket the marker S[b] = its seq now
-- (data sets up to S[b] hold contributions of records below H, those after it not); a
-- watermark hold `rewind:<g>` until the re-read reaches every H[p].
-- Returns the stored record: 'g|T'|from|starts|handovers|seqs' (lists comma separated).

local src, rewinds, holds = KEYS[1], KEYS[2], KEYS[3]
local now, from_window, from = ARGV[1], ARGV[2], ARGV[3]
local g = tonumber(redis.call('HGET', rewinds, 'last') or '0') + 1
local starts, handovers, seqs = {}, {}, {}
for i = 4, #ARGV do
  local partition = tostring(i - 4)
  local packed = redis.call('HGET', src, partition)
  local applied = -1
  if packed then applied = tonumber(string.match(packed, '^(-?%d+):')) end
  local handover = applied + 1
  local start = tonumber(ARGV[i])
  if start > handover then start = handover end
  starts[#starts + 1] = string.format('%.0f', start)
  handovers[#handovers + 1] = string.format('%.0f', handover)
end
for k = 4, #KEYS do
  seqs[#seqs + 1] = redis.call('GET', KEYS[k]) or '0'
end
local record = table.concat({g, from_window, from, table.concat(starts, ','),
                             table.concat(handovers, ','), table.concat(seqs, ',')}, '|')
redis.call('HSET', rewinds, 'last', g, g, record)
redis.call('HSET', holds, 'rewind:' .. g, now)
return record
