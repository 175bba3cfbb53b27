'use strict'

const launcher = require('../launcher')
const { takePositionals, launcherOptions, usageError } = require('./common')

const USAGE = 'collector stop <name>'

/**
 * `collector stop <name>`: drains, then PM2 marks it stopped. Exits as the
 * collector did: 1, with how many, when its final summary says messages
 * were dropped at shutdown or kept as dead letters then.
 */
async function run (argv) {
  const { values: [name], rest } = takePositionals(argv, ['name'], USAGE)
  if (rest.length) throw usageError(`unexpected argument(s): ${rest.join(' ')}\nusage: ${USAGE}`)
  const proc = await launcher.stop(name, launcherOptions())
  const left = proc && proc.left
  // Not stored yet, safe on disk (the database was away): said, not an error (QA: the stop said nothing of them).
  const waiting = left && left.buffered > 0 ? `; ${left.buffered} messages not yet stored wait in its disk buffer, stored at its next start (collector start ${name})` : ''
  process.stdout.write(`stopped ${name} (${proc ? proc.status : 'gone'})${waiting}\n`)
  if (!left || (left.dropped === 0 && left.kept === 0)) return 0
  if (left.dropped > 0) process.stderr.write(`collector: ${name}: ${left.dropped} messages dropped at shutdown (dropped.shutdown): not stored before the workers' flushTimeout, and not kept; collector logs ${name} says why\n`)
  if (left.kept > 0) process.stderr.write(`collector: ${name}: ${left.kept} messages not stored before the workers' flushTimeout were kept as dead letters (deadLetteredBy.shutdown); collector replay ${name} queues them to be stored at its next start\n`)
  return 1
}

module.exports = { run, USAGE }
