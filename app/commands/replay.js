'use strict'

const fs = require('node:fs')
const { readStats } = require('../stats-file')
const { listDeadLetters, queueForReplay } = require('../../lib/master/dead-letters')
const { defaultBufferDir, defaultDeadLetterDir } = require('../../lib/shared/state-dir')
const CollectorError = require('../../exceptions/collector-error')
const { commandConfig, takePositionals, defaultStatsDir, usageError } = require('./common')

const USAGE = 'collector replay <name> [file...] [--dead-letter-dir DIR]'
const Config = commandConfig(USAGE, {
  deadLetterDir: { type: 'path', description: 'the collector\'s dead-letter directory (default: the one its stats file names, else its default)' }
})

/**
 * `collector replay <name> [file...]`: queues the collector's dead letters
 * (all, or the files named) for delivery. A running collector delivers them
 * at its next rolling restart (`collector restart <name>`, after the fix is
 * deployed); a stopped one when it starts. See docs/delivery.md.
 */
async function run (argv) {
  if (argv[0] === '--help' || argv[0] === '-h') return Config.printHelp()
  const { values: [name], rest } = takePositionals(argv, ['name'], USAGE)
  const firstFlag = rest.findIndex((arg) => arg.startsWith('-'))
  const files = firstFlag === -1 ? rest : rest.slice(0, firstFlag)
  const config = Config.parse(firstFlag === -1 ? [] : rest.slice(firstFlag))
  if (config.help) return Config.printHelp()
  const dir = config.deadLetterDir || await deadLetterDirOf(name)
  if (!fs.existsSync(dir)) {
    // Nothing ever dead-lettered there: a name mistyped, or a collector
    // started with another directory (or PM2_HOME) than the one looked in.
    throw new CollectorError(`no dead-letter directory ${dir}${config.deadLetterDir ? '' : ` for ${name}: is the name right (see \`collector ls\`)? one started with another --dead-letter-dir, PM2_HOME or COLLECTOR_STATS_DIR: give the same`}`, 'ERR_NO_DEAD_LETTERS', { name, dir })
  }
  let queued
  try {
    queued = queueForReplay(dir, files)
  } catch (err) {
    if (err.code === 'ENOENT') throw usageError(err.message)
    throw err
  }
  const waiting = listDeadLetters(dir).filter((e) => e.queued)
  if (queued.length === 0 && waiting.length === 0) {
    process.stdout.write(`collector: no dead letters for ${name} in ${dir}\n`)
    return 0
  }
  const messages = waiting.reduce((sum, e) => sum + (e.messages || 0), 0)
  process.stdout.write([
    `queued ${queued.length} dead letter${queued.length === 1 ? '' : 's'} of ${name} for replay; ${waiting.length} (${messages} messages) now wait in ${dir}/replay`,
    `a running collector delivers them at its next rolling restart (collector restart ${name}), once the cause is fixed; a stopped one when it starts`,
    ''
  ].join('\n'))
  return 0
}

// Where the collector keeps its dead letters: as its stats file says (its
// last run's options), else the default with its disk buffer (on in the
// CLI for collectors that store), else without.
async function deadLetterDirOf (name) {
  const snapshot = await readStats(name, defaultStatsDir())
  const known = snapshot && snapshot.stats && snapshot.stats.deadLetters
  if (known && known.dir) return known.dir
  const withBuffer = defaultDeadLetterDir(name, defaultBufferDir(name))
  return fs.existsSync(withBuffer) ? withBuffer : defaultDeadLetterDir(name)
}

module.exports = { run, USAGE }
