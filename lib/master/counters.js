'use strict'

const { MASTER_REASONS } = require('../shared/drop-reasons')

/**
 * The master's own counters, and the only code that changes them (the
 * fields are private: nothing else can write them); per-worker ones live on
 * the worker handles. Every received message is counted once, when its fate
 * is known: `accepted` (a worker, or the disk buffer behind it, took it) or
 * `dropped` (thrown away, by reason). The summary adds `dropped.kernel`, the
 * one loss the master never sees: datagrams the kernel discarded before the
 * master read them, read from the socket when asked. It is not in
 * `received`, so `received + dropped.kernel = processed + failed + dropped.total + deadLettered`
 * (see accountedFor for the disk buffer's part).
 */
class MasterCounters {
  #received = 0
  #bytes = 0
  #dispatched = 0
  #dropped = Object.fromEntries(MASTER_REASONS.map((reason) => [reason, 0]))
  // Messages a previous run left in the disk buffer, delivered by this one
  // (and dead letters queued for replay).
  #replayed = 0
  // Messages given up and kept in the dead-letter directory (may be partly
  // stored: not `dropped`, which means stored by no sink).
  #deadLettered = 0
  #deadLetteredBy = {}
  // The disk buffer: messages left in it for the next run at stop, and
  // damaged records skipped when it was opened.
  #buffer = { kept: 0, damagedRecords: 0, damagedBytes: 0 }
  #events = {}
  // Events that have a cause: per event, counts by reason (their sum is the event's count).
  #eventReasons = {}
  #listenerRestarts = 0

  // Frozen: a write such as `counters.received++` from elsewhere throws
  // instead of starting a second, silent count.
  constructor () {
    Object.freeze(this)
  }

  /** The hot path: a received message of `bytes` bytes that a worker took. */
  accepted (bytes) {
    this.#received++
    this.#bytes += bytes
    this.#dispatched++
  }

  /**
   * receive 'reuseport': what a worker's own socket brought, `n` messages
   * of `bytes` bytes taken, and `dropped` ({ reason: n } | null) refused at its door.
   */
  receivedByWorker (n, bytes, dropped) {
    this.#received += n
    this.#bytes += bytes
    this.#dispatched += n
    if (dropped) {
      for (const [reason, count] of Object.entries(dropped)) {
        this.#received += count
        this.#dropped[reason] = (this.#dropped[reason] || 0) + count
      }
    }
  }

  /** A received message thrown away before any worker took it, by reason. */
  dropped (reason) {
    this.#received++
    this.#dropped[reason] = (this.#dropped[reason] || 0) + 1
  }

  /** `n` messages counted when accepted or replayed that will not be stored after all (workerLost, shutdown, bufferUnreadable). */
  droppedAccepted (reason, n) {
    this.#dropped[reason] = (this.#dropped[reason] || 0) + n
  }

  /** `n` messages a previous run left in the disk buffer, handed to this run's workers. */
  replayed (n) {
    this.#replayed += n
  }

  /** `n` messages counted when accepted or replayed, given up and kept as a dead letter, for `reason`. */
  deadLettered (n, reason) {
    this.#deadLettered += n
    if (reason !== undefined) this.#deadLetteredBy[reason] = (this.#deadLetteredBy[reason] || 0) + n
  }

  /** `n` messages left in the disk buffer for the next run. */
  kept (n) {
    this.#buffer.kept += n
  }

  /** Damaged disk buffer records skipped when it was opened. */
  damaged (records, bytes) {
    this.#buffer.damagedRecords += records
    this.#buffer.damagedBytes += bytes
  }

  listenerRestarted () {
    this.#listenerRestarts++
  }

  /**
   * Counts one event (`connections`, `connectionsRejected`, …) and, when a
   * reason is given, that reason under it: `eventReasons.connectionsRejected.notAllowed`.
   * Returns the event's count.
   */
  event (name, reason) {
    const count = (this.#events[name] || 0) + 1
    this.#events[name] = count
    if (reason !== undefined) {
      const reasons = this.#eventReasons[name] || (this.#eventReasons[name] = {})
      reasons[reason] = (reasons[reason] || 0) + 1
    }
    return count
  }

  /** The counters now, as copies the caller may keep or change. */
  read () {
    return {
      received: this.#received,
      bytes: this.#bytes,
      dispatched: this.#dispatched,
      dropped: { ...this.#dropped },
      replayed: this.#replayed,
      deadLettered: this.#deadLettered,
      deadLetteredBy: { ...this.#deadLetteredBy },
      buffer: { ...this.#buffer },
      events: { ...this.#events },
      eventReasons: Object.fromEntries(Object.entries(this.#eventReasons).map(([name, reasons]) => [name, { ...reasons }])),
      restarts: { listener: this.#listenerRestarts }
    }
  }
}

function totalDropped (dropped) {
  let total = 0
  for (const value of Object.values(dropped)) total += value
  return total
}

/**
 * Whether every message a summary counts has an outcome: stored/done,
 * failed, dropped, given up and kept (dead-lettered), or left in the disk
 * buffer for the next run:
 * received + replayed + dropped.kernel = processed + failed + dropped.total + deadLettered + buffered.
 */
function accountedFor (s) {
  return s.inFlight === 0 && s.received + (s.replayed || 0) + s.dropped.kernel === s.processed + s.failed + s.dropped.total + (s.deadLettered || 0) + (s.buffered || 0)
}

module.exports = { MasterCounters, totalDropped, accountedFor }
