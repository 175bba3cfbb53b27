'use strict'

const { readStats, writesOf } = require('../stats-file')
const { listDeadLetters } = require('../../lib/master/dead-letters')
const { commandConfig, takePositionals, defaultStatsDir, formatTable, formatUptime, formatBytes } = require('./common')
const { printableJson } = require('../terminal-text')

const USAGE = 'collector status <name> [--json]'
const Config = commandConfig(USAGE, {
  json: { type: 'boolean', default: false, description: 'print the stats file (JSON)' }
})

const WORKER_COLUMNS = [
  { key: 'slot', title: 'SLOT' },
  { key: 'pid', title: 'PID' },
  { key: 'state', title: 'STATE', align: 'left' },
  { key: 'processed', title: 'PROCESSED' },
  { key: 'rate', title: 'PROCESSED/S' },
  { key: 'inFlight', title: 'IN-FLIGHT' },
  { key: 'failed', title: 'FAILED' },
  { key: 'writes', title: 'DB WRITES' }
]

/** `collector status <name> [--json]`: counters from the collector's stats file. */
async function run (argv) {
  if (argv[0] === '--help' || argv[0] === '-h') return Config.printHelp()
  const { values: [name], rest } = takePositionals(argv, ['name'], USAGE)
  const config = Config.parse(rest)
  if (config.help) return Config.printHelp()
  const dir = defaultStatsDir()
  const snapshot = await readStats(name, dir)
  if (!snapshot) {
    process.stderr.write(`collector: no stats for ${name} in ${dir} (is it running? see \`collector ls\`)\n`)
    return 1
  }
  process.stdout.write(config.json ? printableJson(snapshot, 2) + '\n' : render(snapshot))
  return 0
}

function render (snap) {
  const { stats: s, rates: r } = snap
  const address = s.address ? `${s.address.address}:${s.address.port}` : '-'
  const stale = snap.age > 3 * snap.interval ? `  (last update ${Math.round(snap.age / 1000)} s ago)` : ''
  const dropped = Object.entries(s.dropped).filter(([k, v]) => k !== 'total' && v > 0).map(([k, v]) => `${k} ${v}`).join(', ')
  // A stopped collector's process is gone: no pid (the stats file has none).
  const head = snap.pid === null
    ? `${snap.name}  ${s.state}  ${s.protocol} ${address}  ran ${formatUptime(s.uptime)}, stopped ${snap.time}`
    : `${snap.name}  ${s.state}  pid ${snap.pid}  ${s.protocol} ${address}  up ${formatUptime(s.uptime)}${stale}`
  const lines = [
    head,
    `collector  ${snap.collector}`,
    '',
    formatTable(COUNTER_COLUMNS, [
      { what: 'total', received: s.received, processed: s.processed, failed: s.failed, dropped: s.dropped.total, lost: s.lost, inFlight: s.inFlight },
      { what: 'per second', received: r.received, processed: r.processed, failed: r.failed, dropped: r.dropped, lost: null, inFlight: null }
    ]).trimEnd(),
    `dropped by reason: ${dropped || 'none'}`,
    ...bufferLines(s),
    ...deadLetterLines(snap.name, s),
    `restarts: listener ${s.restarts.listener}, worker respawns ${s.restarts.workers}, rolling ${s.restarts.rolling}`,
    '',
    formatTable(WORKER_COLUMNS, s.workers.map((w) => workerRow(w, r))).trimEnd(),
    ''
  ]
  return lines.join('\n')
}

const COUNTER_COLUMNS = [
  { key: 'what', title: '', align: 'left' },
  { key: 'received', title: 'RECEIVED' },
  { key: 'processed', title: 'PROCESSED' },
  { key: 'failed', title: 'FAILED' },
  { key: 'dropped', title: 'DROPPED' },
  { key: 'lost', title: 'LOST' },
  { key: 'inFlight', title: 'IN-FLIGHT' }
]

// The disk buffer, when on (stats files of collectors without it, or from
// before it, have buffer null or none: no line).
function bufferLines (s) {
  const b = s.buffer
  if (!b) return []
  const notes = [
    b.full && 'FULL: new messages are dropped',
    b.damagedRecords > 0 && `${b.damagedRecords} damaged records skipped at start`,
    b.kept > 0 && `${b.kept} kept for the next start`,
    b.writeErrors > 0 && `${b.writeErrors} write errors`
  ].filter(Boolean)
  return [
    `disk buffer: ${s.buffered} waiting (oldest ${formatUptime(b.oldestMs)}), ${formatBytes(b.bytes)} of ${formatBytes(b.maxBytes)} in ${b.segments} segment${b.segments === 1 ? '' : 's'}, replayed ${s.replayed}, dropped when full ${s.dropped.bufferFull}${notes.length ? `; ${notes.join('; ')}` : ''}`,
    `  ${b.dir}`
  ]
}

// Shown at most, newest last: the count line says how many there are.
const DEAD_LETTERS_LISTED = 10

// Batches given up (stats files from before dead letters have no
// deadLetters: no line), listed from the directory itself, so that what
// earlier runs left shows too: time, reason, messages, file, and whether
// `collector replay` queued it.
function deadLetterLines (name, s) {
  const d = s.deadLetters
  if (!d) return []
  const entries = listDeadLetters(d.dir)
  const thisRun = s.deadLettered > 0 ? `, ${s.deadLettered} messages given up by this run` : ''
  const replayed = d.replayed > 0 ? `, ${d.replayed} replayed` : ''
  if (entries.length === 0) return thisRun || replayed ? [`dead letters: none left${thisRun}${replayed}`] : []
  const messages = entries.reduce((sum, e) => sum + (e.messages || 0), 0)
  const queued = entries.filter((e) => e.queued).length
  const next = queued === entries.length
    ? `all queued: delivered at the next start or rolling restart (collector restart ${name})`
    : `collector replay ${name} queues them, delivered at the next start or rolling restart`
  const shown = entries.slice(-DEAD_LETTERS_LISTED)
  return [
    `dead letters: ${entries.length} (${messages} messages) in ${d.dir}${thisRun}${replayed}; ${next}`,
    ...(shown.length < entries.length ? [`  … ${entries.length - shown.length} older not listed`] : []),
    ...shown.map((e) => `  ${e.at || '?'}  ${e.reason || 'unknown'}  ${e.messages ?? '?'} messages  ${e.queued ? 'replay/' : ''}${e.name}.ccj${e.detail ? `  (${e.detail})` : ''}`)
  ]
}

function workerRow (w, rates) {
  const rate = rates.workers.find((x) => x.slot === w.slot && x.pid === w.pid)
  const writes = writesOf(w) ?? null
  return { ...w, rate: rate ? rate.processed : null, writes }
}

module.exports = { run, render }
