'use strict'

// What a HEP worker remembers between messages (its enrich state; one
// call's SIP and RTCP meet in one worker, call-key.js): the copies it has
// just seen, so that a packet captured twice (an agent on a duplicating
// interface, two agents on one path) is stored and counted once; and per
// call, how many SIP messages it stored (the per-call cap), the SSRCs of
// its media (a BYE of its answered dialog ends them), its first answer and
// the dialogs whose BYE it stored. Gone with the worker: what that costs is
// said in docs/hep.md (Duplicates, and the calls' dialogs).

/**
 * Copies of one capture: the same bytes between the same addresses and
 * ports, of the same protocol type, captured within `windowMs` of each
 * other (by the capture times the agents stamp). A SIP retransmission is the
 * same bytes too, but sent again after T1 (500 ms, RFC 3261 §17.1.1.2) or
 * later: a window under that keeps it. Held by arrival in two generations
 * that rotate every `max(1 s, 2 × windowMs)` of arrival time (`now`: when
 * the packet reached the master; a copy comes within milliseconds of its
 * original) or when one holds `maxHeld / 2`; both forgotten after two such
 * spans without a packet.
 */
class CopyWindow {
  constructor ({ windowMs, maxHeld = 200000 }) {
    this.windowMs = windowMs
    this.half = Math.max(1, Math.floor(maxHeld / 2))
    this.span = Math.max(1000, 2 * windowMs)
    this.current = new Map()
    this.previous = new Map()
    this.rotatedAt = Date.now()
    this.evicted = 0 // entries forgotten because a generation filled up before its time
  }

  /** Whether the packet of `fingerprint` captured at `at` (ms), arrived at `now`, is a copy of one seen; remembers it if not. */
  isCopy (fingerprint, at, now = Date.now()) {
    if (this.windowMs <= 0) return false
    // Two spans or more since the last rotation (an idle worker): both
    // generations are of what arrived that long ago, none a copy's.
    if (now - this.rotatedAt >= 2 * this.span) this.forget(now)
    else if (now - this.rotatedAt >= this.span || this.current.size >= this.half) this.rotate(now)
    const times = this.current.get(fingerprint)
    if (isNear(times, at, this.windowMs) || isNear(this.previous.get(fingerprint), at, this.windowMs)) return true
    // The capture times of one packet's bytes: a number, the usual case, or
    // the last few when it was sent again (a copy of the first may come
    // after the second).
    if (times === undefined) this.current.set(fingerprint, at)
    else if (typeof times === 'number') this.current.set(fingerprint, [times, at])
    else {
      if (times.length === MAX_TIMES) times.shift()
      times.push(at)
    }
    return false
  }

  rotate (now) {
    if (now - this.rotatedAt < this.span) this.evicted += this.previous.size
    this.previous = this.current
    this.current = new Map()
    this.rotatedAt = now
  }

  forget (now) {
    if (this.previous.size > 0) this.previous = new Map()
    if (this.current.size > 0) this.current = new Map()
    this.rotatedAt = now
  }

  get size () { return this.current.size + this.previous.size }
}

const MAX_TIMES = 8

/**
 * The SIP messages a worker read back as it started (copy-warmup.js): by
 * copy key, the capture time and `_id` of each, so that a copy of one the
 * worker before it stored is known as one. Not the message itself delivered
 * again (its key is that `_id`: a worker that died after storing it and
 * before its acknowledgement), whose other writes may not have landed.
 * Forgotten once a message that arrived after `until` comes (`now`, its
 * arrival): a copy of one read back arrived before that.
 */
class StoredCopies {
  constructor () {
    this.byKey = new Map() // copy key → [[at, id (hex)], …]
    this.until = 0
  }

  add (fingerprint, at, id) {
    const seen = this.byKey.get(fingerprint)
    if (seen) seen.push([at, id])
    else this.byKey.set(fingerprint, [[at, id]])
  }

  /** Whether the message of `fingerprint` captured at `at` copies one stored within `windowMs`; `idOf()` gives its own key (hex), asked only then. */
  isCopy (fingerprint, at, windowMs, idOf, now = Date.now()) {
    if (this.byKey.size === 0) return false
    if (now > this.until) {
      this.byKey.clear()
      return false
    }
    const seen = this.byKey.get(fingerprint)
    if (seen === undefined) return false
    for (const [time, id] of seen) if (Math.abs(at - time) <= windowMs && id !== idOf()) return true
    return false
  }

  /**
   * Whether the message of `fingerprint` whose key is `idOf()` is itself
   * one read back: delivered again (its worker died before acknowledging
   * it), so not a copy whatever else came first: its writes are applied
   * once by their guards, and what of them had not landed lands now.
   */
  holds (fingerprint, idOf, now = Date.now()) {
    if (this.byKey.size === 0 || now > this.until) return false
    const seen = this.byKey.get(fingerprint)
    if (seen === undefined) return false
    const id = idOf()
    for (const entry of seen) if (entry[1] === id) return true
    return false
  }

  get size () { return this.byKey.size }
}

/**
 * Per stream side (a reporter and the source it reports on), the copy keys
 * of its RTCP reports that arrived within the last `span` (CopyWindow's),
 * written with each report on its side (`recentCaptures`, index.js), so
 * that a worker that starts reads back every report whose copy may still
 * come (copy-warmup.js), not the side's last alone: a side that reports
 * faster than its copies lag behind (WebRTC's RTCP, a few a second) has
 * others after the one a copy is of. Two generations by arrival, as
 * CopyWindow's: a side silent for two spans is forgotten.
 */
class SideCaptures {
  constructor ({ span, maxPerSide = 16 }) {
    this.span = span
    this.maxPerSide = maxPerSide
    this.current = new Map()
    this.previous = new Map()
    this.rotatedAt = Date.now()
  }

  /** Adds a report's capture (`{ key, at, message }`) of `side`, arrived at `now`; returns the side's captures that arrived within a span of it, oldest first. */
  add (side, capture, now = Date.now()) {
    if (now - this.rotatedAt >= 2 * this.span) {
      this.previous = new Map()
      this.current = new Map()
      this.rotatedAt = now
    } else if (now - this.rotatedAt >= this.span) {
      this.previous = this.current
      this.current = new Map()
      this.rotatedAt = now
    }
    const held = this.current.get(side) || this.previous.get(side) || []
    const kept = held.filter((entry) => now - entry.arrived <= this.span)
    kept.push({ capture, arrived: now })
    if (kept.length > this.maxPerSide) kept.shift()
    this.current.set(side, kept)
    return kept.map((entry) => entry.capture)
  }

  get size () { return this.current.size + this.previous.size }
}

// Dialogs of one call whose BYE is stored: a forked INVITE brings one per
// phone that answered, a handful.
const MAX_BYE_DIALOGS = 8

function isNear (times, at, windowMs) {
  if (times === undefined) return false
  if (typeof times === 'number') return Math.abs(at - times) <= windowMs
  for (const time of times) if (Math.abs(at - time) <= windowMs) return true
  return false
}

/**
 * Per call (by Call-ID), the SIP messages stored, the SSRCs of its media
 * as RTCP named them, its first answer (`firstAnswer` as calls.js writes
 * it: `<time>|<dialog>`) and the dialogs whose BYE went to the call's
 * `byes`; the `maxCalls` most recently touched are held.
 */
class CallLedger {
  constructor ({ maxCalls = 100000 } = {}) {
    this.maxCalls = maxCalls
    this.calls = new Map()
    this.evicted = 0
  }

  entry (callId) {
    let entry = this.calls.get(callId)
    if (entry) this.calls.delete(callId) // to the end: the most recent
    else entry = { messages: 0, ssrcs: null, answer: null, byeDialogs: null }
    this.calls.set(callId, entry)
    if (this.calls.size > this.maxCalls) {
      this.calls.delete(this.calls.keys().next().value)
      this.evicted++
    }
    return entry
  }

  /** Counts one more SIP message of the call; false when it is past `cap`. */
  admitMessage (callId, cap) {
    const entry = this.entry(callId)
    if (entry.messages >= cap) return false
    entry.messages++
    return true
  }

  /** The call's media has a stream side of `ssrc`. */
  addSsrc (callId, ssrc) {
    const entry = this.entry(callId)
    if (!entry.ssrcs) entry.ssrcs = new Set()
    if (entry.ssrcs.size < 64) entry.ssrcs.add(ssrc)
  }

  /** A 2xx to the call's INVITE, as calls.js writes `firstAnswer`: the earliest is kept, as its $min keeps it. */
  noteAnswer (callId, firstAnswer) {
    const entry = this.entry(callId)
    if (entry.answer === null || firstAnswer < entry.answer) entry.answer = firstAnswer
  }

  /**
   * Whether a BYE of `dialog` (calls.js dialogOf) ends the call as far as
   * this worker has seen: it is the dialog answered first, or no answer was
   * seen here (a worker that came after it, an answer not captured).
   */
  byeEndsCall (callId, dialog) {
    const entry = this.calls.get(callId)
    if (!entry || entry.answer === null) return true
    return entry.answer.slice(entry.answer.indexOf('|') + 1) === dialog
  }

  /**
   * Whether a BYE of `dialog` may go to the call's `byes`: a dialog already
   * there, the dialog answered first, or while fewer than MAX_BYE_DIALOGS
   * are (a sender making up tags must not grow the document without end).
   */
  admitBye (callId, dialog) {
    const entry = this.entry(callId)
    if (!entry.byeDialogs) entry.byeDialogs = new Set()
    if (entry.byeDialogs.has(dialog)) return true
    const answered = entry.answer !== null && entry.answer.slice(entry.answer.indexOf('|') + 1) === dialog
    if (!answered && entry.byeDialogs.size >= MAX_BYE_DIALOGS) return false
    entry.byeDialogs.add(dialog)
    return true
  }

  /** The SSRCs the call's RTCP named (an empty list when none, or forgotten). */
  ssrcsOf (callId) {
    const entry = this.calls.get(callId)
    return entry && entry.ssrcs ? [...entry.ssrcs] : []
  }

  get size () { return this.calls.size }
}

module.exports = { CopyWindow, StoredCopies, SideCaptures, CallLedger }
