//! The Lua scripts the transport runs on the server: each is atomic (Redis runs a script to
//! its end before any other command), so a batch and its capacity check, the products of an ack
//! and the ack, a dead letter and the removal of its entry happen together or not at all (short
//! of the server failing mid-script, see the crate documentation on durability).
//!
//! Every topic stream's entries have a field `body` (the event's JSON) and, when the entry was
//! put back after earlier deliveries, a field `attempts` (how many deliveries came before).

use std::sync::LazyLock;

use redis::Script;

/// Publishes a batch (from outside, or the products of an ack), atomically.
///
/// `KEYS[1]`: the topics set; `KEYS[1 + i]`, `i` in `1..=n`: the stream of event `i`;
/// `KEYS[n + 2]` (an ack only): the stream of the consumed entry.
/// `ARGV[1]`: the group; `ARGV[2]`: the capacity (0: admit over it); `ARGV[3]`: `n`;
/// `ARGV[3 + i]`: the topic of event `i`; `ARGV[3 + n + i]`: its body; `ARGV[4 + 2n]` (an ack
/// only): the consumed entry's id.
///
/// Creates each stream's group if missing. With a capacity, returns 0 (and writes nothing but
/// missing groups) when a stream already holds events waiting undelivered (entries less those
/// pending) and the batch's events for it would take it past the capacity. Otherwise adds every
/// event in order, records the topics, acknowledges and deletes the consumed entry, and returns
/// 1.
pub(crate) static PUBLISH: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local group = ARGV[1]
local capacity = tonumber(ARGV[2])
local n = tonumber(ARGV[3])
local counts = {}
local order = {}
for i = 1, n do
  local key = KEYS[1 + i]
  if counts[key] == nil then
    counts[key] = 0
    order[#order + 1] = key
  end
  counts[key] = counts[key] + 1
end
for _, key in ipairs(order) do
  local pending = 0
  local p = redis.pcall('XPENDING', key, group)
  if type(p) == 'table' and p.err == nil then
    pending = p[1]
  else
    redis.call('XGROUP', 'CREATE', key, group, '0', 'MKSTREAM')
  end
  if capacity > 0 then
    local waiting = redis.call('XLEN', key) - pending
    if waiting > 0 and waiting + counts[key] > capacity then
      return 0
    end
  end
end
for i = 1, n do
  redis.call('XADD', KEYS[1 + i], '*', 'body', ARGV[3 + n + i])
end
for i = 1, n do
  redis.call('SADD', KEYS[1], ARGV[3 + i])
end
if #KEYS == n + 2 then
  redis.call('XACK', KEYS[n + 2], group, ARGV[4 + 2 * n])
  redis.call('XDEL', KEYS[n + 2], ARGV[4 + 2 * n])
end
return 1
",
    )
});

/// Puts a delivered entry back: at once at the end of its stream, or after a delay in the
/// topic's delayed set; then acknowledges and deletes it.
///
/// `KEYS[1]`: the stream; `KEYS[2]`: the topic's delayed set. `ARGV[1]`: the group;
/// `ARGV[2]`: the consumer holding it; `ARGV[3]`: the entry's id; `ARGV[4]`: the deliveries to
/// count for it so far; `ARGV[5]`: the delay in milliseconds (0: at once).
///
/// Returns 0 (and does nothing) when the entry is not pending for that consumer any more
/// (settled, or taken over by another consumer after the visibility timeout), else 1.
pub(crate) static PUT_BACK: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[3], ARGV[3], 1)
if p[1] == nil or p[1][2] ~= ARGV[2] then
  return 0
end
local e = redis.call('XRANGE', KEYS[1], ARGV[3], ARGV[3])
if e[1] ~= nil then
  local body = nil
  local f = e[1][2]
  for i = 1, #f, 2 do
    if f[i] == 'body' then body = f[i + 1] end
  end
  if body ~= nil then
    local delay = tonumber(ARGV[5])
    if delay <= 0 then
      redis.call('XADD', KEYS[1], '*', 'body', body, 'attempts', ARGV[4])
    else
      local t = redis.call('TIME')
      local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
      redis.call('ZADD', KEYS[2], string.format('%d', now + delay), cmsgpack.pack(ARGV[3], body, ARGV[4]))
    end
  end
end
redis.call('XACK', KEYS[1], ARGV[1], ARGV[3])
redis.call('XDEL', KEYS[1], ARGV[3])
return 1
",
    )
});

/// Moves the due events of a topic's delayed set back to the end of its stream.
///
/// `KEYS[1]`: the delayed set; `KEYS[2]`: the stream. `ARGV[1]`: the most to move. Returns how
/// many moved.
pub(crate) static MOVE_DUE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', string.format('%d', now), 'LIMIT', 0, tonumber(ARGV[1]))
for _, member in ipairs(due) do
  local _, body, attempts = cmsgpack.unpack(member)
  redis.call('XADD', KEYS[2], '*', 'body', body, 'attempts', attempts)
  redis.call('ZREM', KEYS[1], member)
end
return #due
",
    )
});

/// Takes over the entries of a stream idle for longer than the visibility timeout
/// (`XAUTOCLAIM`), with how many times each was delivered.
///
/// `KEYS[1]`: the stream. `ARGV[1]`: the group; `ARGV[2]`: the consumer; `ARGV[3]`: the
/// minimum idle time in milliseconds; `ARGV[4]`: the cursor; `ARGV[5]`: the most to take.
/// Returns `{next cursor, {{id, fields, deliveries}, ...}}`.
pub(crate) static CLAIM: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local r = redis.call('XAUTOCLAIM', KEYS[1], ARGV[1], ARGV[2], ARGV[3], ARGV[4], 'COUNT', ARGV[5])
local out = {}
for _, e in ipairs(r[2]) do
  if e and e[2] then
    local p = redis.call('XPENDING', KEYS[1], ARGV[1], e[1], e[1], 1)
    local count = 1
    if p[1] ~= nil then count = p[1][4] end
    out[#out + 1] = {e[1], e[2], count}
  end
end
return {r[1], out}
",
    )
});

/// Restarts a delivery's visibility timeout (`XCLAIM` to its own consumer, `JUSTID`: the
/// delivery count stays), if its consumer still holds it.
///
/// `KEYS[1]`: the stream. `ARGV[1]`: the group; `ARGV[2]`: the consumer; `ARGV[3]`: the id.
/// Returns 1 when kept, 0 when the entry is not pending for that consumer any more.
pub(crate) static KEEP: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[3], ARGV[3], 1)
if p[1] == nil or p[1][2] ~= ARGV[2] then
  return 0
end
redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, ARGV[3], 'JUSTID')
return 1
",
    )
});

/// Moves an entry to the dead letters with its reason, then acknowledges and deletes it.
///
/// `KEYS[1]`: the stream; `KEYS[2]`: the dead-letter stream. `ARGV[1]`: the group; `ARGV[2]`:
/// the entry's id; `ARGV[3]`: the topic; `ARGV[4]`: the attempt; `ARGV[5]`: the reason;
/// `ARGV[6]`: the most dead letters kept (approximately); `ARGV[7]`: the longest body kept;
/// `ARGV[8]`: the consumer.
///
/// Returns 0 (and does nothing) when the entry is no longer in the stream (settled elsewhere),
/// else 1. The dead letter's fields: `topic`, `entry`, `attempt`, `reason`, `at` (the server's
/// time in milliseconds since the epoch), `consumer`, `body` (cut to the longest kept, with
/// `truncated` holding the size before), `fields` (the names of the entry's fields, when it had
/// no `body`).
pub(crate) static DEAD_LETTER: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local e = redis.call('XRANGE', KEYS[1], ARGV[2], ARGV[2])
if e[1] == nil then
  redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
  return 0
end
local body = nil
local names = {}
local f = e[1][2]
for i = 1, #f, 2 do
  names[#names + 1] = f[i]
  if f[i] == 'body' then body = f[i + 1] end
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local args = {'XADD', KEYS[2], 'MAXLEN', '~', ARGV[6], '*',
  'topic', ARGV[3], 'entry', ARGV[2], 'attempt', ARGV[4], 'reason', ARGV[5],
  'at', string.format('%d', now), 'consumer', ARGV[8]}
if body == nil then
  body = ''
  args[#args + 1] = 'fields'
  args[#args + 1] = table.concat(names, ',')
end
local max = tonumber(ARGV[7])
if #body > max then
  args[#args + 1] = 'truncated'
  args[#args + 1] = tostring(#body)
  body = string.sub(body, 1, max)
end
args[#args + 1] = 'body'
args[#args + 1] = body
redis.call(unpack(args))
redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
redis.call('XDEL', KEYS[1], ARGV[2])
return 1
",
    )
});

/// Removes a consumer from the groups of some streams where it holds nothing (removing one
/// that holds entries would strand them).
///
/// `KEYS`: the streams. `ARGV[1]`: the group; `ARGV[2]`: the consumer.
pub(crate) static FORGET_CONSUMER: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
for _, key in ipairs(KEYS) do
  local p = redis.pcall('XPENDING', key, ARGV[1], '-', '+', 1, ARGV[2])
  if type(p) == 'table' and p.err == nil and p[1] == nil then
    redis.pcall('XGROUP', 'DELCONSUMER', key, ARGV[1], ARGV[2])
  end
end
return 1
",
    )
});
