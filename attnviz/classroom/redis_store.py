"""The class store in Redis, for several processes or machines (``ATTNVIZ_CLASS_STORE=redis://...``).

Keys, all under ``attnviz:`` and all expiring with their class (Redis deletes them on its own):

    attnviz:c:{code}          hash: the ClassRecord's fields, and p:{session} -> when each teacher
                              session was last seen (``present``)
    attnviz:m:{code}          hash: student id -> display name
    attnviz:a:{code}:{q}      hash: student id -> canonical answer to question q
    attnviz:q:{code}          set: the questions that have answers (to delete them with the class)
    attnviz:classes           sorted set: code by expiry, for ``purge``
    attnviz:h:{key}:{until}   rate-limit counter for one window

Every check-then-write is one Lua script, so it is atomic on the server.

Ending a class (``delete``, ``purge``) deletes its keys and the rate-limit counters that name it,
then asks Redis to rewrite what it keeps on disk: an append-only file would otherwise keep every
write the class made until its next automatic rewrite, and an RDB snapshot the class as it was at
the last save. Where the server refuses (a managed Redis may disable the commands), the keys are
still gone from memory at once, and from disk at the server's next rewrite or save.
"""

from __future__ import annotations

import contextlib
import time

import redis

from attnviz.classroom.store import ClassRecord, Phase

_P = "attnviz:"
_INDEX = _P + "classes"
REWRITE_WAITS = 60  # x 50 ms: how long an end of class waits for a running rewrite

_CREATE = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'token_hash', ARGV[1], 'created', ARGV[2], 'expires', ARGV[3],
  'slide', ARGV[4], 'question', ARGV[5], 'phase', ARGV[6], 'version', ARGV[7], 'example', ARGV[8],
  'joining', ARGV[10])
redis.call('PEXPIREAT', KEYS[1], math.floor(tonumber(ARGV[3]) * 1000))
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[9])
return 1
"""
_UPDATE = """
local c = redis.call('HMGET', KEYS[1], 'token_hash', 'expires')
if not c[1] or c[1] ~= ARGV[1] or tonumber(c[2]) <= tonumber(ARGV[2]) then return 0 end
if ARGV[3] ~= '' then redis.call('HSET', KEYS[1], 'slide', ARGV[3]) end
if ARGV[4] == '1' then redis.call('HSET', KEYS[1], 'question', ARGV[5]) end
if ARGV[6] ~= '' then redis.call('HSET', KEYS[1], 'phase', ARGV[6]) end
if ARGV[7] ~= '' then redis.call('HSET', KEYS[1], 'joining', ARGV[7]) end
redis.call('HINCRBY', KEYS[1], 'version', 1)
return 1
"""
_JOIN = """
local c = redis.call('HMGET', KEYS[1], 'expires', 'joining')
local expires = c[1]
if not expires or tonumber(expires) <= tonumber(ARGV[3]) then return 0 end
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 0 and
   (c[2] == '0' or redis.call('HLEN', KEYS[2]) >= tonumber(ARGV[4])) then return 0 end
if ARGV[2] ~= '' or redis.call('HEXISTS', KEYS[2], ARGV[1]) == 0 then
  redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
end
redis.call('PEXPIREAT', KEYS[2], math.floor(tonumber(expires) * 1000))
return 1
"""
_REKEY = """
local c = redis.call('HMGET', KEYS[1], 'token_hash', 'expires')
if not c[1] or c[1] ~= ARGV[1] or tonumber(c[2]) <= tonumber(ARGV[3]) then return 0 end
redis.call('HSET', KEYS[1], 'token_hash', ARGV[2])
for _, f in ipairs(redis.call('HKEYS', KEYS[1])) do
  if string.sub(f, 1, 2) == 'p:' then redis.call('HDEL', KEYS[1], f) end
end
return 1
"""
_PRESENT = """
local expires = redis.call('HGET', KEYS[1], 'expires')
if not expires or tonumber(expires) <= tonumber(ARGV[2]) then return 0 end
redis.call('HSET', KEYS[1], 'p:' .. ARGV[1], ARGV[2])
local n, all = 0, redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  if string.sub(all[i], 1, 2) == 'p:' then
    if tonumber(all[i + 1]) > tonumber(ARGV[2]) - tonumber(ARGV[3]) then n = n + 1
    else redis.call('HDEL', KEYS[1], all[i]) end
  end
end
return n
"""
_ANSWER = """
local c = redis.call('HMGET', KEYS[1], 'expires', 'question', 'phase')
if not c[1] or tonumber(c[1]) <= tonumber(ARGV[4]) or c[2] ~= ARGV[1] or c[3] ~= 'open' then
  return 0 end
if redis.call('HEXISTS', KEYS[2], ARGV[2]) == 0 then return 0 end
local at = math.floor(tonumber(c[1]) * 1000)
redis.call('HSET', KEYS[3], ARGV[2], ARGV[3])
redis.call('PEXPIREAT', KEYS[3], at)
redis.call('SADD', KEYS[4], ARGV[1])
redis.call('PEXPIREAT', KEYS[4], at)
return 1
"""
_REMOVE = """
local n = redis.call('HDEL', KEYS[1], ARGV[1])
for _, q in ipairs(redis.call('SMEMBERS', KEYS[2])) do redis.call('HDEL', ARGV[2] .. q, ARGV[1]) end
return n
"""
_DELETE = """
local qs = redis.call('SMEMBERS', KEYS[3])
for _, q in ipairs(qs) do redis.call('DEL', ARGV[2] .. q) end
local n = redis.call('DEL', KEYS[1])
redis.call('DEL', KEYS[2], KEYS[3])
redis.call('ZREM', KEYS[4], ARGV[1])
return n
"""
_HIT = """
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIREAT', KEYS[1], ARGV[1]) end
return n
"""


class RedisStore:
    """The ``Store`` in the Redis at url (``redis://host:port/db``)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._r = redis.Redis.from_url(
            url, decode_responses=True, socket_timeout=5, socket_connect_timeout=5
        )
        self._create = self._r.register_script(_CREATE)
        self._update = self._r.register_script(_UPDATE)
        self._join = self._r.register_script(_JOIN)
        self._rekey = self._r.register_script(_REKEY)
        self._present = self._r.register_script(_PRESENT)
        self._answer = self._r.register_script(_ANSWER)
        self._delete = self._r.register_script(_DELETE)
        self._remove = self._r.register_script(_REMOVE)
        self._hit = self._r.register_script(_HIT)

    def close(self) -> None:
        self._r.close()

    def create(self, record: ClassRecord) -> bool:
        r = record
        args = [r.token_hash, repr(r.created), repr(r.expires), r.slide, r.question]
        args += [r.phase.value, r.version, r.example, r.code, "1" if r.joining else "0"]
        return self._create(keys=[_P + "c:" + r.code, _INDEX], args=args) == 1

    def load(self, code: str, now: float) -> ClassRecord | None:
        fields = self._r.hgetall(_P + "c:" + code)
        if not fields:
            return None
        record = _record(code, fields)
        if record.expires <= now:
            self.delete(code)
            return None
        return record

    def update(
        self,
        code: str,
        token_hash: str,
        now: float,
        *,
        slide: int | None = None,
        question: str | None = None,
        phase: Phase | None = None,
        joining: bool | None = None,
    ) -> ClassRecord | None:
        args = [token_hash, repr(now), "" if slide is None else str(int(slide))]
        args += ["0" if question is None else "1", question or ""]
        args += ["" if phase is None else phase.value]
        args += ["" if joining is None else "1" if joining else "0"]
        if self._update(keys=[_P + "c:" + code], args=args) != 1:
            return None
        return self.load(code, now)

    def join(self, code: str, student: str, name: str, now: float, max_members: int) -> bool:
        keys = [_P + "c:" + code, _P + "m:" + code]
        return self._join(keys=keys, args=[student, name, repr(now), max_members]) == 1

    def rekey(self, code: str, token_hash: str, new_hash: str, now: float) -> bool:
        args = [token_hash, new_hash, repr(now)]
        return self._rekey(keys=[_P + "c:" + code], args=args) == 1

    def present(self, code: str, session: str, now: float, window_s: float) -> int:
        args = [session, repr(now), repr(float(window_s))]
        return int(self._present(keys=[_P + "c:" + code], args=args))

    def remove(self, code: str, student: str) -> bool:
        keys = [_P + "m:" + code, _P + "q:" + code]
        return self._remove(keys=keys, args=[student, f"{_P}a:{code}:"]) == 1

    def members(self, code: str) -> dict[str, str]:
        return self._r.hgetall(_P + "m:" + code)

    def answer(self, code: str, question: str, student: str, answer: str, now: float) -> bool:
        keys = [_P + "c:" + code, _P + "m:" + code, f"{_P}a:{code}:{question}", _P + "q:" + code]
        return self._answer(keys=keys, args=[question, student, answer, repr(now)]) == 1

    def answers(self, code: str, question: str) -> dict[str, str]:
        return self._r.hgetall(f"{_P}a:{code}:{question}")

    def delete(self, code: str) -> bool:
        gone = self._forget(code)
        self._scrub()
        return gone

    def purge(self, now: float) -> int:
        gone = 0
        for code in self._r.zrangebyscore(_INDEX, "-inf", now):
            self._forget(code)
            gone += 1
        if gone:
            self._scrub()
        return gone

    def _forget(self, code: str) -> bool:
        """Delete the class's keys and every rate-limit counter naming it (answer:{code}:...)."""
        keys = [_P + "c:" + code, _P + "m:" + code, _P + "q:" + code, _INDEX]
        gone = self._delete(keys=keys, args=[code, f"{_P}a:{code}:"]) == 1
        hits = list(self._r.scan_iter(match=f"{_P}h:*{code}*", count=1000))
        if hits:
            self._r.delete(*hits)
        return gone

    def _scrub(self) -> None:
        """Have Redis rewrite its files without the deleted keys: the append-only file when it
        keeps one, a new snapshot when it saves them (a running rewrite or save is followed by
        another). Best effort: a server that refuses keeps them until its own next rewrite."""
        with contextlib.suppress(redis.ResponseError):
            if self._r.info("persistence").get("aof_enabled"):
                # a rewrite already running copies what was there before this delete, and Redis
                # refuses a second one meanwhile: wait for it (a small store rewrites in ms)
                for _ in range(REWRITE_WAITS):
                    if not self._r.info("persistence").get("aof_rewrite_in_progress"):
                        break
                    time.sleep(0.05)
                self._r.bgrewriteaof()
            if self._r.config_get("save").get("save"):
                self._r.bgsave(schedule=True)

    def hit(self, key: str, window_s: int, now: float) -> int:
        until = (int(now) // window_s + 1) * window_s
        return int(self._hit(keys=[f"{_P}h:{key}:{until}"], args=[until * 1000 + 1000]))

    def count(self, key: str, window_s: int, now: float) -> int:
        until = (int(now) // window_s + 1) * window_s
        return int(self._r.get(f"{_P}h:{key}:{until}") or 0)


def _record(code: str, f: dict[str, str]) -> ClassRecord:
    return ClassRecord(
        code=code,
        token_hash=f["token_hash"],
        created=float(f["created"]),
        expires=float(f["expires"]),
        slide=int(f["slide"]),
        question=f.get("question", ""),
        phase=Phase(f.get("phase", Phase.NONE.value)),
        version=int(f.get("version", 0)),
        example=f.get("example", ""),
        joining=f.get("joining", "1") != "0",
    )
