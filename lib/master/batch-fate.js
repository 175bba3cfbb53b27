'use strict'

// What becomes of a batch a worker did not finish (WorkerPool#onExit):
// the evidence against it, and how it is given up (dead-lettered, left in
// the disk buffer for the next run, or dropped by reason). `pool`: the
// WorkerPool whose events say it.

// A batch is poison once this many workers in a row ended by themselves
// while processing it (WorkerPool#onExit): it is given up and dead-lettered, so
// that a message that kills every worker it reaches cannot take the whole
// collector down with it.
const POISON_STRIKES = 3
// How a worker that ended by itself can end: an exit of its own (a throw
// nothing caught, process.exit) or a signal the process raises against
// itself (V8 out of memory aborts, a native fault). Any other signal came
// from outside (an operator, a supervisor, the kernel's OOM killer): no
// evidence against what the worker was processing.
const CRASH_SIGNALS = new Set(['SIGABRT', 'SIGSEGV', 'SIGBUS', 'SIGILL', 'SIGFPE', 'SIGTRAP', 'SIGSYS'])

/**
 * Of the batches a worker (its WorkerHandle) was sent and has not
 * acknowledged: those it has been through (awaiting storage: `finished`,
 * or `finishedBatches` from its progress file) and the one it is
 * processing, the first after them (null when none). One not begun counts
 * as processing too: the evidence is the order, the worker processes its
 * batches one at a time as they come.
 */
function progress (handle, finishedBatches = 0) {
  const through = Math.min(Math.max(handle.finished, finishedBatches, handle.acked) - handle.acked, handle.unacked.length)
  return { finished: handle.unacked.slice(0, through), processing: handle.unacked[through] || null }
}

/**
 * The evidence against the batches of a worker that just ended: those it
 * had been through (doWork done, awaiting storage; `finishedBatches`, what
 * its progress file says, or what it said over IPC) are cleared; the one
 * it was processing is returned as the suspect, with how it ended, when
 * it ended by itself (an exit of its own or a crash signal, not a kill
 * from outside, and not a stop we asked for). Read before its batches
 * are taken back.
 */
function judge (handle, finishedBatches, expected, code, signal) {
  const { finished, processing } = progress(handle, finishedBatches)
  for (const batch of finished) batch.cleared()
  if (expected || processing === null || (signal !== null && !CRASH_SIGNALS.has(signal))) return null
  return { batch: processing, cause: signal !== null ? `signal ${signal}` : `exit code ${code}` }
}

// A batch no worker of this run will take: it stays in the disk buffer
// for the next run when it lies there (in a segment with a name); else it is given up (dead-lettered)
// under `reason`: a worker died holding it (workerLost), or the workers
// could not store it before their time ran out at stop (shutdown), when
// part of it may be stored and dropping it would say none of it was.
function leave (pool, batch, reason) {
  if (batch.at && pool.journal.keeps(batch)) pool.emit('kept', batch.count)
  else giveUp(pool, batch, reason, LEFT[reason])
}

// Why a batch was left, as its dead letter says. Part of it may be stored
// (its worker wrote some of its effects): replaying it completes it once.
const LEFT = Object.freeze({
  workerLost: 'a worker died holding it while the collector stopped, or no worker was left to take it',
  shutdown: 'not stored before the stop\'s time ran out (the workers\' flushTimeout, the master\'s drainTimeout: the database or the worker slow or away); part of it may be stored'
})

/**
 * A batch given up: kept in the dead-letter directory with its reason
 * (its bytes read back from the disk buffer when they lie there only),
 * then out of the buffer, or every start would replay it into the same
 * deaths. 'deadLettered' (n, entry); dropped under its reason
 * (workerLost for poison) only when it cannot be kept ('deadLetterFailed',
 * err, that reason).
 */
function giveUp (pool, batch, reason, detail) {
  const droppedAs = reason === 'shutdown' ? 'shutdown' : 'workerLost'
  let entry = null
  try {
    entry = pool.deadLetters.keep(batch, batch.bytes !== null ? batch.bytes : pool.journal.read(batch), reason, detail)
  } catch (err) {
    pool.emit('deadLetterFailed', err, droppedAs)
  }
  if (pool.journal !== null) pool.journal.release(batch)
  if (entry !== null) pool.emit('deadLettered', batch.count, entry)
  else pool.emit('dropped', droppedAs, batch.count)
}

/** A batch given up as poison; returns its strikes (the crashes it caused). */
function giveUpPoison (pool, batch) {
  giveUp(pool, batch, 'poison', `${batch.strikes.length} workers in a row ended by themselves while processing it (${batch.strikes.join(', ')})`)
  return batch.strikes.length
}

/**
 * A slot's crash times (ms) within `window`, with the crash that just
 * happened; but when it gave up a batch as poison (`poisoned`: the batch's
 * strikes), that crash and the batch's earlier ones are taken off: they
 * were the batch's. Counted against the slot, a sender's fourth poison
 * message in a minute gave its slot up (past maxCrashes), then every slot.
 */
function crashHistory (history, window, poisoned, now = Date.now()) {
  const crashes = history.filter((t) => now - t < window)
  if (poisoned > 0) crashes.splice(Math.max(0, crashes.length - (poisoned - 1)))
  else crashes.push(now)
  return crashes
}

module.exports = { POISON_STRIKES, judge, leave, giveUp, giveUpPoison, crashHistory }
