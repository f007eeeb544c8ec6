-- Folds what a response said into a key's window, by the rules of `src/gate/store/ledger.rs`,
-- `src/gate/rules/window.rs` and `src/gate/rules/quota.rs`: the answered request is no longer
-- out; the later closure stands (never brought forward); within one window the lower count.
-- KEYS[1]: the key's hash; KEYS[2]: its requests out. ARGV: closed_in, remaining, reset_in,
-- limit, ticket, linger_ms (durations in milliseconds from now; -1: none), and same_window_ms:
-- two resets further apart than this name different windows.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local f = redis.call('HMGET', KEYS[1], 'closed', 'remaining', 'reset', 'restored', 'opened',
  'opened_issued', 'issued', 'r_from', 'r_to')
local closed = tonumber(f[1]) or 0
local remaining = tonumber(f[2])
local reset = tonumber(f[3]) or 0
local restored = f[4] == '1'
local opened, opened_issued = tonumber(f[5]), tonumber(f[6]) or 0
local issued = tonumber(f[7]) or 0
local r_from, r_to = tonumber(f[8]), tonumber(f[9])
local closed_in, reported, reset_in, limit, ticket, linger =
  tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]),
  tonumber(ARGV[5]), tonumber(ARGV[6])
local same_window = tonumber(ARGV[7])

local function fold(known, known_reset, new, new_reset)
  local earlier = new_reset + same_window < known_reset
  local later = new_reset > known_reset + same_window
  local spent = known == 0
  if (earlier and (new ~= 0 or spent)) or (later and spent and new ~= 0) then
    return nil
  end
  if earlier or later then
    return new, new_reset
  end
  local folded_reset
  if spent and new == 0 then
    folded_reset = math.max(known_reset, new_reset)
  elseif spent then
    folded_reset = known_reset
  elseif new == 0 then
    folded_reset = new_reset
  else
    folded_reset = math.min(known_reset, new_reset)
  end
  return math.min(known, new), folded_reset
end

if ticket >= 0 then
  redis.call('ZREM', KEYS[2], ticket)
end
-- A refusal where the server publishes no quota. The first of the fleet's window ends it and
-- measures its length (to the end of its wait); each counts against the requests reserved in
-- the window before the first, whose answers come back in any order. The reserve script
-- learns from the count when the next window opens.
local function refusal(till)
  if opened then
    redis.call('HSET', KEYS[1], 'r_span', math.max(till - opened, 0), 'r_from', opened_issued,
      'r_to', issued, 'r_refusals', 0)
    redis.call('HDEL', KEYS[1], 'opened', 'opened_issued')
    r_from, r_to = opened_issued, issued
  end
  if r_from and ticket > r_from and ticket <= r_to then
    redis.call('HINCRBY', KEYS[1], 'r_refusals', 1)
  end
end

if closed_in > 0 then
  if not remaining and reported < 0 then
    refusal(now + closed_in)
  end
  if now + closed_in > closed then
    closed = now + closed_in
    redis.call('HSET', KEYS[1], 'closed', closed)
  end
end
if limit >= 0 then
  redis.call('HSET', KEYS[1], 'limit', limit)
end
if reported >= 0 and reset_in > 0 then
  -- A meter speaks: nothing learned stands beside it.
  redis.call('HDEL', KEYS[1], 'opened', 'opened_issued', 'l_limit', 'l_span', 'l_unrefused',
    'l_patience', 'l_raised', 'r_span', 'r_from', 'r_to', 'r_refusals')
  local new, new_reset = reported, now + reset_in
  local folded, folded_reset
  if remaining and reset > now and not restored then
    folded, folded_reset = fold(remaining, reset, new, new_reset)
  else
    folded, folded_reset = new, new_reset
    redis.call('HSET', KEYS[1], 'span', reset_in)
  end
  if folded then
    remaining, reset = folded, folded_reset
    redis.call('HSET', KEYS[1], 'remaining', remaining, 'reset', reset, 'restored', 0)
  end
end
local l_span = tonumber(redis.call('HGET', KEYS[1], 'l_span')) or 0
local last = math.max(closed, remaining and reset or 0, opened and opened + l_span or 0, now)
-- Never shortened: the reserve script may have named a later time.
if redis.call('PTTL', KEYS[1]) < last - now + linger then
  redis.call('PEXPIRE', KEYS[1], last - now + linger)
end
return {0}
