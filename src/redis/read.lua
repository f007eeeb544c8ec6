-- Reads a key's ledger for a process to change by the rules of `src/gate/store/ledger.rs`:
-- Redis's own clock, so that no two processes' clocks are ever compared, the version the
-- ledger is at (0 where none is kept), and the ledger as JSON (empty where none is kept).
-- KEYS[1]: the key's hash.
local t = redis.call('TIME')
local kept = redis.call('HMGET', KEYS[1], 'version', 'ledger')
return {tonumber(t[1]), tonumber(t[2]), tonumber(kept[1]) or 0, kept[2] or ''}
