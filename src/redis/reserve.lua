-- Reserves one request of a key's window, by the rules of `src/gate/store/ledger.rs` (its
-- window's by `src/gate/rules/window.rs`).
-- KEYS[1]: the key's hash; KEYS[2]: its requests out (a sorted set of tickets, scored by when
-- each stops counting). ARGV: metered (1 or 0), look_again_ms, linger_ms, out_at_most_ms, and
-- the ledger's constants for learning a limit: patience, most_patience, far_below.
-- Times are Redis's own clock in milliseconds; the answer gives durations from now, so that
-- no process's clock is compared with another's.
-- Answers {0, ticket} or {1, until_in, closed_in, available, reset_in, limit} (-1: none).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local f = redis.call('HMGET', KEYS[1], 'closed', 'remaining', 'reset', 'issued', 'limit',
  'span', 'restored', 'opened', 'opened_issued', 'l_limit', 'l_span', 'l_unrefused',
  'l_patience', 'l_raised', 'r_span', 'r_from', 'r_to', 'r_refusals')
local closed = tonumber(f[1]) or 0
local remaining = tonumber(f[2])
local reset = tonumber(f[3]) or 0
local issued = tonumber(f[4])
local limit = tonumber(f[5])
local span = tonumber(f[6]) or 0
local restored = f[7] == '1'
-- Where the server publishes no quota: the fleet's window, and what its refusals taught.
local opened, opened_issued = tonumber(f[8]), tonumber(f[9]) or 0
local l_limit, l_span = tonumber(f[10]), tonumber(f[11]) or 0
local l_unrefused = tonumber(f[12]) or 0
local l_raised = f[14] == '1'
-- The window a refusal ended, while its other answers come in.
local r_span, r_from, r_to, r_refusals = tonumber(f[15]), tonumber(f[16]), tonumber(f[17]),
  tonumber(f[18]) or 0
local metered = ARGV[1] == '1'
local look_again, linger, out_at_most = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local patience, most_patience, far_below = tonumber(ARGV[5]), tonumber(ARGV[6]),
  tonumber(ARGV[7])
local l_patience = tonumber(f[13]) or patience

redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
local out = redis.call('ZCARD', KEYS[2])
if not issued then
  -- The hash expired while requests were out: number on from the last of them.
  local last = redis.call('ZRANGE', KEYS[2], -1, -1)
  issued = tonumber(last[1]) or 0
end

local function available()
  return math.max(remaining - out, 0)
end

-- Every key expires on its own, a little after the last time it names (never shortened: the
-- merge script may have named a later one); the requests out as their answers come (an empty
-- set is no key).
local function keep()
  local last = math.max(closed, remaining and reset or 0, opened and opened + l_span or 0, now)
  if redis.call('PTTL', KEYS[1]) < last - now + linger then
    redis.call('PEXPIRE', KEYS[1], last - now + linger)
  end
end

local function held(till)
  keep()
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
if not remaining then
  -- The fleet's window: opened by its first reservation, over after the learned length (an
  -- unrefused one counts toward a raise of the limit).
  if opened and l_limit and now >= opened + l_span then
    l_unrefused = l_unrefused + 1
    l_raised = l_unrefused >= l_patience
    if l_raised then
      l_limit, l_unrefused = l_limit + 1, 0
    end
    redis.call('HSET', KEYS[1], 'l_limit', l_limit, 'l_unrefused', l_unrefused, 'l_raised',
      l_raised and 1 or 0)
    opened = nil
  end
  if opened and not l_limit and now >= opened + out_at_most then
    -- Nothing learned yet: a window is measured over at most this long, so that a refusal
    -- after a long quiet run does not teach a limit over all of it.
    opened = nil
  end
  if not opened and r_span and r_span <= out_at_most then
    -- What the refused window measured: the requests it accepted are the limit. One that
    -- accepted none, or far fewer than the limit, opened before the server's did: only its
    -- length is taken, and only to lengthen the window. Of the lengths measured, the
    -- shortest is the closest (each runs past the server's window by the refusal's place in
    -- it and its rounding).
    local accepted = math.max(r_to - r_from - r_refusals, 0)
    if l_limit and (accepted == 0 or accepted < math.floor(l_limit / far_below)) then
      l_span = math.max(l_span, r_span)
    elseif accepted > 0 then
      if l_limit then
        l_patience = l_raised and math.min(l_patience * 2, most_patience) or l_patience
        l_span = math.min(l_span, r_span)
      else
        l_patience, l_span = patience, r_span
      end
      l_limit, l_unrefused, l_raised = accepted, 0, false
    end
    if l_limit then
      redis.call('HSET', KEYS[1], 'l_limit', l_limit, 'l_span', l_span, 'l_unrefused',
        l_unrefused, 'l_patience', l_patience, 'l_raised', l_raised and 1 or 0)
    end
  end
  if not opened and r_span then
    redis.call('HDEL', KEYS[1], 'r_span', 'r_from', 'r_to', 'r_refusals')
  end
  if not opened then
    opened, opened_issued = now, issued
    redis.call('HSET', KEYS[1], 'opened', opened, 'opened_issued', opened_issued)
  end
  if metered and l_limit and issued - opened_issued >= l_limit then
    local till = opened + l_span
    return {1, till - now, -1, 0, till - now, l_limit}
  end
end
issued = issued + 1
redis.call('HSET', KEYS[1], 'issued', issued)
redis.call('ZADD', KEYS[2], now + out_at_most, issued)
keep()
redis.call('PEXPIRE', KEYS[2], out_at_most + linger)
return {0, issued}
