'use strict'

// Runs in a definition's worker: its `warm(state, db, settings)` hook, once
// the database is prepared, before the worker takes its first message, so
// that what a worker remembers per key (`state`) starts from what the
// database holds rather than from nothing: the HEP collector reads back the
// SIP messages that arrived within its copy window, so that a copy of one
// the worker before it stored, arriving after that worker died, is known
// as a copy (docs/hep.md, Duplicates). Messages wait for it WARM_WAIT_MS at
// most from the worker's start (a database away or slow at the start does
// not hold them longer); the hook still runs once the database is there,
// later than they waited (what it reads may still be of use: the HEP
// collector's is), and the worker's writes wait for it, WARM_WAIT_MS at
// most again: what it reads is what the database held before this worker
// wrote (a message that went on without it is written after the read, not
// raced against it). A read that fails is logged, not retried.

const WARM_WAIT_MS = 3000

class DefinitionWarm {
  /** A definition's warm-up in `worker` (a DefinitionWorker), or null when it has no `warm` hook. */
  static of (definition, worker) {
    return typeof definition.warm === 'function' ? new DefinitionWarm(definition, worker) : null
  }

  constructor (definition, worker) {
    this.definition = definition
    this.worker = worker
    this.started = false // the hook was called
    this.done = false // messages no longer wait for it
    this.ready = new Promise((resolve) => {
      this.release = () => {
        this.done = true
        clearTimeout(this.timer)
        resolve()
      }
    })
    this.timer = setTimeout(() => {
      this.worker.logger.warn({ waitedMs: WARM_WAIT_MS, started: this.started },
        `warm-up: ${this.started ? 'still reading' : 'the database not ready'} after ${WARM_WAIT_MS} ms; messages go on without it${this.started ? '' : ', and it runs once the database is there'}`)
      this.release()
    }, WARM_WAIT_MS)
    this.timer.unref()
  }

  /** Calls the hook, once, with `db` (the worker's database, prepared); resolves once it settled, or WARM_WAIT_MS later. */
  start (db) {
    if (this.started) return this.settled
    this.started = true
    const began = Date.now()
    const read = Promise.resolve()
      .then(() => this.definition.warm(this.worker.enrichState, db, this.worker.settings, { heldSince: () => this.worker.heldSince() }))
      .then((warmed) => this.worker.logger.info({ warmed, ms: Date.now() - began }, 'warm-up: read back what this worker remembers'),
        (err) => this.worker.logger.warn({ error: err && err.message }, `warm-up failed (${err && err.message}); messages go on without it`))
      .finally(() => this.release())
    this.settled = Promise.race([read, new Promise((resolve) => setTimeout(resolve, WARM_WAIT_MS).unref())])
    return this.settled
  }
}

module.exports = { DefinitionWarm }
