'use strict'

const CollectorError = require('../../exceptions/collector-error')

/*
 * The reasons the master drops a message under by itself (docs/counters.md),
 * declared once: the master's counters start from them, and a reason a
 * collector refuses a message under (a DecodeError's, a Worker's
 * dropMessage) may not be one of them, nor `kernel` (the socket's drops,
 * read from the kernel) or `total`: counted under one, a refusal would
 * overwrite it or read as lost (QA: `DecodeError('kernel')` vanished from
 * the counters, received ≠ processed + failed + dropped).
 */

/** What the master counts dropped by itself, each from 0. */
const MASTER_REASONS = Object.freeze(['queueFull', 'oversize', 'badFrame', 'empty', 'partial', 'workerLost', 'shutdown', 'notAllowed', 'bufferFull', 'bufferUnreadable'])
const RESERVED = new Set([...MASTER_REASONS, 'kernel', 'total'])
const REASON = /^[A-Za-z][A-Za-z0-9_.-]{0,63}$/

/**
 * What is wrong with `reason` as the name a collector refuses a message
 * under, or null: a token of up to 64 letters, digits, `_`, `.` and `-`,
 * starting with a letter (a counter's key, a metric's label, a word in
 * `collector status`), not one of the master's own.
 * @param {*} reason
 * @returns {string|null}
 */
function reasonProblem (reason) {
  if (typeof reason !== 'string' || !REASON.test(reason)) return `a reason is a token of up to 64 letters, digits, _, . and -, starting with a letter (got ${JSON.stringify(String(reason).slice(0, 80))})`
  if (RESERVED.has(reason) || reason in Object.prototype) return `"${reason}" is a reason the framework counts under itself: give the refusal a name of its own`
  return null
}

let lastGood = null // a flood of refusals is one reason over and over: checked once

/** Throws ERR_DECODE_REASON, naming `by` (DecodeError, dropMessage), when `reason` cannot be a collector's own (reasonProblem). */
function checkReason (reason, by) {
  if (reason === lastGood) return
  const problem = reasonProblem(reason)
  if (problem) throw new CollectorError(`${by}: ${problem}`, 'ERR_DECODE_REASON', { given: reason }) // no `reason`: not a refusal itself
  lastGood = reason
}

module.exports = { MASTER_REASONS, reasonProblem, checkReason }
