-- Writes a key's ledger back, unless another process wrote it since it was read: a
-- compare-and-set on its version. The hash expires on its own when its ledger has nothing
-- left to say. A version is Redis's clock in milliseconds (exact in Lua's numbers), or one
-- more than the last where the clock has not moved on: a hash that expired and was written
-- again never takes a version a process read before it expired.
-- KEYS[1]: the key's hash. ARGV: the version read, the ledger as JSON, how long to keep it in
-- milliseconds.
-- Answers 1 if it wrote, 0 if the version had moved (the process reads again).
local version = tonumber(redis.call('HGET', KEYS[1], 'version')) or 0
if version ~= tonumber(ARGV[1]) then
  return 0
end
local t = redis.call('TIME')
local clock = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', KEYS[1], 'version', math.max(clock, version + 1), 'ledger', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
