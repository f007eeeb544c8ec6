-- Reserves one request of a key's window, by the rules of `src/gate/ledger.rs`.
-- KEYS[1]: the key's hash; KEYS[2]: its requests out (a sorted set of tickets, scored by when
-- each stops counting). ARGV: metered (1 or 0), look_again_ms, linger_ms, out_at_most_ms.
-- Times are Redis's own clock in milliseconds; the answer gives durations from now, so that
-- no process's clock is compared with another's.
-- Answers {0, ticket} or {1, until_in, closed_in, available, reset_in, limit} (-1: none).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local f = redis.call('HMGET', KEYS[1], 'closed', 'remaining', 'reset', 'issued', 'limit',
  'span', 'restored')
local closed = tonumber(f[1]) or 0
local remaining = tonumber(f[2])
local reset = tonumber(f[3]) or 0
local issued = tonumber(f[4])
local limit = tonumber(f[5])
local span = tonumber(f[6]) or 0
local restored = f[7] == '1'
local metered = ARGV[1] == '1'
local look_again, linger, out_at_most = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])

redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
local out = redis.call('ZCARD', KEYS[2])

local function available()
  return math.max(remaining - out, 0)
end

local function held(till)
  local shown_quota = remaining and reset > now and not restored
  return {
    1,
    till - now,
    closed > now and closed - now or -1,
    shown_quota and available() or -1,
    shown_quota and reset - now or -1,
    limit or -1,
  }
end

if closed > now then
  return held(closed)
end
-- A spent window that has reset gives the next the whole quota, where the server gave it.
if remaining and reset <= now then
  if available() == 0 and limit and limit > 0 then
    remaining, reset, restored = limit, now + span, true
    redis.call('HSET', KEYS[1], 'remaining', remaining, 'reset', reset, 'restored', 1)
  else
    remaining = nil
    redis.call('HDEL', KEYS[1], 'remaining', 'reset', 'restored')
  end
end
if metered and remaining and reset > now and available() == 0 then
  if restored then
    return held(now + look_again)
  end
  return held(reset)
end
if not issued then
  -- The hash expired while requests were out: number on from the last of them.
  local last = redis.call('ZRANGE', KEYS[2], -1, -1)
  issued = tonumber(last[1]) or 0
end
issued = issued + 1
redis.call('HSET', KEYS[1], 'issued', issued)
redis.call('ZADD', KEYS[2], now + out_at_most, issued)
-- Every key expires on its own, a little after the last time it names; the requests out as
-- their answers come (an empty set is no key).
local last = math.max(closed, remaining and reset or 0, now)
redis.call('PEXPIRE', KEYS[1], last - now + linger)
redis.call('PEXPIRE', KEYS[2], out_at_most + linger)
return {0, issued}
