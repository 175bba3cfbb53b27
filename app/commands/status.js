'use strict'

const { readStats, writesOf } = require('../stats-file')
const { listDeadLetters } = require('../../lib/master/dead-letters')
const { commandConfig, takePositionals, defaultStatsDir, formatTable, formatUptime, formatBytes } = require('./common')
const { printable, printableJson } = require('../terminal-text')
const { storageOf } = require('../../lib/shared/worker-stats')
const { isAlive } = require('../../lib/shared/is-alive')
const { flagTypes } = require('../../lib/shared/value-types')

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
  { key: 'writes', title: 'DB WRITES' },
  { key: 'database', title: 'DATABASE', align: 'left' }
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
    // A collector keeps them under the PM2_HOME (or COLLECTOR_STATS_DIR) it started with.
    process.stderr.write(`collector: no stats for ${name} in ${dir} (is it running? see \`collector ls\`; one started with another PM2_HOME or COLLECTOR_STATS_DIR keeps them there: run this with the same)\n`)
    return 1
  }
  // The stats file says what its writer last knew; a master killed (SIGKILL,
  // a crash) left it saying running.
  snapshot.alive = snapshot.pid !== null && isAlive(snapshot.pid)
  process.stdout.write(config.json ? printableJson(snapshot, 2) + '\n' : render(snapshot))
  return 0
}

function render (snap) {
  const { stats: s, rates: r } = snap
  const address = s.address ? `${s.address.address}:${s.address.port}` : '-'
  const stale = snap.age > 3 * snap.interval ? `  (last update ${Math.round(snap.age / 1000)} s ago)` : ''
  const dropped = Object.entries(s.dropped).filter(([k, v]) => k !== 'total' && v > 0).map(([k, v]) => `${printable(k)} ${v}`).join(', ') // a definition's reasons may be a sender's text
  // A stopped collector's process is gone: no pid (the stats file has none).
  const head = snap.pid === null
    ? `${snap.name}  ${s.state}  ${s.protocol} ${address}  ran ${formatUptime(s.uptime)}, stopped ${snap.time}`
    : snap.alive === false
      ? `${snap.name}  gone  pid ${snap.pid} is not running: it ended without a stop (killed, or crashed)  ${s.protocol} ${address}  last update ${snap.time}`
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
    ...eventLines(s),
    ...tallyLines(s.workers),
    ...bufferLines(s, snap.pid !== null && snap.alive !== false),
    ...deadLetterLines(snap.name, s),
    ...storageLines(storageOf(s)),
    `restarts: listener ${s.restarts.listener}, worker respawns ${s.restarts.workers}, rolling ${s.restarts.rolling}`,
    '',
    formatTable(WORKER_COLUMNS, s.workers.map((w) => workerRow(w, r))).trimEnd(),
    ...dbErrorLines(s.workers),
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

// What befell connections and the machinery (docs/counters.md events),
// those that happened, each with its reasons: a TLS client refused, a
// connection over a limit, a frame timed out showed in --json and /metrics
// only, and this said "dropped by reason: none".
function eventLines (s) {
  const reasons = s.eventReasons || {}
  const told = Object.entries(s.events || {}).filter(([, n]) => n > 0).map(([event, n]) => {
    const why = Object.entries(reasons[event] || {}).filter(([, m]) => m > 0).map(([reason, m]) => `${printable(reason)} ${m}`)
    return `${event} ${n}${why.length ? ` (${why.join(', ')})` : ''}`
  })
  return told.length ? [`events: ${told.join(', ')}`] : []
}

// What the definition tallied of the records its workers stored (its
// `tally`: syslog's lines stored raw by reason, deviations read, text not
// UTF-8), summed over the workers since each started: in --json only before.
function tallyLines (workers) {
  const sums = {}
  for (const { custom = {} } of workers) {
    for (const name of custom.tallied || []) {
      const sum = sums[name] = sums[name] || {}
      for (const [reason, n] of Object.entries(custom[name] || {})) sum[reason] = (sum[reason] || 0) + n
    }
  }
  const told = Object.entries(sums).map(([name, sum]) => [name, Object.entries(sum).filter(([, n]) => n > 0)]).filter(([, parts]) => parts.length > 0)
  return told.length ? [`tallied: ${told.map(([name, parts]) => `${printable(name)} ${parts.map(([reason, n]) => `${printable(reason)} ${n}`).join(', ')}`).join('; ')}`] : [] // what a definition tallies may be a sender's text
}

// The disk buffer, when on (stats files of collectors without it, or from
// before it, have buffer null or none: no line); `receiving`: the collector
// runs (not stopped, not gone).
function bufferLines (s, receiving) {
  const b = s.buffer
  if (!b) return []
  const notes = [
    b.full && (receiving ? 'FULL: new messages are dropped' : 'full'), // a stopped one takes no new messages
    b.damagedRecords > 0 && `${b.damagedRecords} damaged records skipped at start`,
    b.kept > 0 && `${b.kept} kept for the next start`,
    b.writeErrors > 0 && `${b.writeErrors} write errors`
  ].filter(Boolean)
  return [
    `disk buffer: ${s.buffered} waiting${b.oldestMs > 0 ? ` (oldest ${formatUptime(b.oldestMs)})` : ''}, ${formatBytes(b.bytes)} of ${formatBytes(b.maxBytes)} in ${b.segments} segment${b.segments === 1 ? '' : 's'}, replayed ${s.replayed}, dropped when full ${s.dropped.bufferFull}${notes.length ? `; ${notes.join('; ')}` : ''}`,
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

const STORAGE_COLUMNS = [
  { key: 'name', title: 'COLLECTION', align: 'left' },
  { key: 'documents', title: 'DOCUMENTS' },
  { key: 'data', title: 'DATA' },
  { key: 'indexes', title: 'INDEXES' },
  { key: 'oldest', title: 'OLDEST', align: 'left' },
  { key: 'newest', title: 'NEWEST', align: 'left' },
  { key: 'growth', title: 'GROWTH/DAY' },
  { key: 'retention', title: 'RETENTION' },
  { key: 'deleted', title: 'DELETED RETENTION/BUDGET' }
]

// The leader worker's figures (stats files of collectors without them: no lines).
function storageLines (storage) {
  if (!storage) return []
  const used = storage.maxStorage
    ? `${formatBytes(storage.usedBytes)} of ${formatBytes(storage.maxStorage)} (--max-storage), ${daysLeftText(storage)}`
    : `${formatBytes(storage.usedBytes)}, no budget (--max-storage)`
  const how = storage.expiry === 'ttl' ? 'the server\'s TTL indexes expire documents' : 'the leader worker deletes expired documents (no TTL monitor)'
  const rows = Object.entries(storage.collections).map(([name, c]) => ({
    name,
    // Deleted after the count was measured: said beside it, so that the two columns agree.
    documents: c.documents === null || !(c.deletedSinceMeasured > 0) ? c.documents : `${c.documents} (${c.deletedSinceMeasured} deleted since)`,
    data: c.dataBytes === null ? null : formatBytes(c.dataBytes),
    indexes: c.indexBytes === null ? null : formatBytes(c.indexBytes),
    oldest: timeText(c.oldest),
    newest: timeText(c.newest),
    growth: c.growthPerDay ? `${c.growthPerDay.bytes < 0 ? '-' : '+'}${formatBytes(Math.abs(c.growthPerDay.bytes))}` : null,
    retention: c.retentionMs > 0 ? `${flagTypes.duration.format(c.retentionMs)} by ${c.field}` : 'off',
    deleted: `${c.deleted.retention ?? 'TTL'}/${c.deleted.budget}`
  }))
  return [
    `storage: ${used}; ${how}; measured ${timeText(storage.measuredAt) ?? '-'} UTC (every --storage-interval)`,
    ...formatTable(STORAGE_COLUMNS, rows).trimEnd().split('\n').map((line) => `  ${line}`),
    ...(storage.estimated ? ['  (sizes estimated: the server reports no storage or index sizes, see docs/storage.md#capacity)'] : []),
    ...(storage.ttlDeleted !== null && storage.ttlDeleted !== undefined ? [`  deleted by the server's TTL monitor since the leader started: ${storage.ttlDeleted} (every database, not per collection)`] : [])
  ]
}

function daysLeftText ({ daysLeft: days, overToday }) {
  if (overToday) return 'OVER BUDGET with only today\'s data: nothing is deleted (today\'s never is); raise --max-storage or shorten --retention'
  if (days === null || days === undefined) return 'days left unknown (not growing, or measured for under 10 minutes)'
  if (days === 0) return 'OVER BUDGET: the oldest days are being deleted'
  return days < 1 ? `${(days * 24).toFixed(1)} hours left at the current growth` : `${Math.round(days * 10) / 10} days left at the current growth`
}

function timeText (ms) {
  return ms === null || ms === undefined ? null : new Date(ms).toISOString().slice(0, 19).replace('T', ' ')
}

function workerRow (w, rates) {
  const rate = rates.workers.find((x) => x.slot === w.slot && x.pid === w.pid)
  const writes = writesOf(w) ?? null
  return { ...w, rate: rate ? rate.processed : null, writes, database: databaseState(w.custom) }
}

// What a MongoDB worker says of its database: down (it cannot reach it),
// stalled (a write in progress past serverSelectionTimeoutMS: a frozen or
// overloaded server, which reads as merely slow until then), or ok; '-' for
// workers that report none.
function databaseState (custom) {
  if (!custom || typeof custom.dbDown !== 'boolean') return '-'
  if (custom.dbDown) return 'down'
  if (custom.dbStalled) return `stalled ${Math.round((custom.writeInProgressMs || 0) / 1000)}s`
  // A worker that has not reached its database yet (just started, or
  // respawned while it is away) is not known to be ok (QA: it read ok
  // until its first connect failed, seconds later).
  if (custom.connected === false) return custom.connecting ? 'connecting' : 'not connected yet'
  return 'ok'
}

// Why a worker's database is down or stalled, in its own words (dbError),
// once per distinct reason with the slots that give it.
function dbErrorLines (workers) {
  const slots = new Map()
  for (const w of workers) {
    const reason = w.custom && (w.custom.dbDown || w.custom.dbStalled) && w.custom.dbError
    if (reason) slots.set(reason, [...(slots.get(reason) || []), w.slot])
  }
  return [...slots].map(([reason, at]) => `database (slot${at.length > 1 ? 's' : ''} ${at.join(', ')}): ${printable(reason)}`)
}

module.exports = { run, render, storageLines, daysLeftText }
