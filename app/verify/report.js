'use strict'

// `collector verify`'s verdict from what it compared: the sinks (and kept
// state) from app/verify/compare.js, and the collector's own counters
// against the expectation: processed, refused by reason, failed, and
// nothing dropped or given up by the framework. As JSON (`--json`) or text.

const { printable } = require('../terminal-text')

// Drops that are the framework's, not the definition's: any of them fails verify.
const FRAMEWORK_DROPS = new Set(['queueFull', 'oversize', 'badFrame', 'empty', 'partial', 'workerLost', 'shutdown', 'notAllowed', 'bufferFull', 'bufferUnreadable', 'workerFull', 'newKeyLimit', 'documentTooLarge', 'unstorable'])

/** The counters of the runs that count (see exercise.js), added up. */
function addCounts (counts) {
  const sum = { received: 0, replayed: 0, processed: 0, failed: 0, deadLettered: 0, kernel: 0, dropped: {} }
  for (const s of counts) {
    for (const field of ['received', 'replayed', 'processed', 'failed', 'deadLettered']) sum[field] += s[field] || 0
    for (const [reason, n] of Object.entries(s.dropped || {})) {
      if (reason === 'total' || !n) continue
      if (reason === 'kernel') sum.kernel += n
      else sum.dropped[reason] = (sum.dropped[reason] || 0) + n
    }
  }
  return sum
}

/**
 * The collector's counters against the expected outcomes: `{ verdict, rows, problems }`,
 * rows `{ what, expected, counted }`.
 */
function checkCounts (outcomes, counted) {
  const rows = [
    { what: 'processed', expected: outcomes.processed, counted: counted.processed },
    { what: 'failed', expected: outcomes.failed, counted: counted.failed }
  ]
  const reasons = new Set([...Object.keys(outcomes.refused), ...Object.keys(counted.dropped)])
  for (const reason of [...reasons].sort()) {
    const framework = FRAMEWORK_DROPS.has(reason) && !outcomes.refused[reason]
    rows.push({ what: framework ? `dropped.${reason}` : `refused ${reason}`, expected: outcomes.refused[reason] || 0, counted: counted.dropped[reason] || 0 })
  }
  rows.push({ what: 'dead-lettered', expected: 0, counted: counted.deadLettered })
  const problems = rows.filter((r) => r.expected !== r.counted).map((r) => `${r.what}: expected ${r.expected}, counted ${r.counted}`)
  return { verdict: problems.length ? 'mismatch' : 'exact', rows, problems }
}

/**
 * The whole report: per sink and kept state, the counters, and the verdict:
 * `exactly once`, `mismatch` (a sink or a counter disagrees) or
 * `inconclusive` (some samples never reached the collector: the kernel
 * dropped them, or the definition's outcome depends on the arrival time).
 */
function buildReport ({ collector, samples, run, expected, stored, where, timings }) {
  const counted = addCounts(run.counts)
  const counts = checkCounts(expected.outcomes, counted)
  const checked = [...stored.sinks, ...(stored.kept ? [stored.kept] : [])]
  const failing = checked.filter((s) => s.verdict !== 'exact').map((s) => s.collection)
  const doubts = []
  if (counted.kernel > 0) doubts.push(`${counted.kernel} datagrams dropped by the kernel before the collector read them: send slower (--rate)`)
  if (expected.arrivalDependent > 0) doubts.push(`${expected.arrivalDependent} messages decode differently depending on their arrival time: not compared`)
  const verdict = failing.length || counts.verdict !== 'exact' ? 'mismatch' : doubts.length ? 'inconclusive' : 'exactly once'
  return {
    collector,
    verdict,
    failing,
    samples,
    run: { ...run.summary, database: where, workerKills: run.killed, workerKillsWhileSending: run.killedSending, masterKills: run.held ? 1 : 0, heldAtMasterKill: run.held },
    counters: { received: counted.received, replayed: counted.replayed, processed: counted.processed, failed: counted.failed, dropped: counted.dropped, deadLettered: counted.deadLettered, kernel: counted.kernel },
    counts,
    sinks: stored.sinks,
    kept: stored.kept,
    doubts,
    timings,
    logs: run.logs
  }
}

/** The report as text, for a person or a CI log. */
function formatReport (r) {
  const lines = [
    `collector verify ${r.collector}: ${r.samples.messages} sample messages (${r.samples.files.map((f) => `${f.file}, ${f.format}`).join('; ')})`,
    `  ran on ${r.run.database}: ${r.run.instances} workers, ${r.run.workerKills} worker SIGKILLs (${r.run.workerKillsWhileSending} while sending), ` +
      (r.run.masterKills ? `the master SIGKILLed once holding ${r.run.heldAtMasterKill} messages, replayed by the next run` : 'no master kill'),
    `  counted: received ${r.counters.received + r.run.heldAtMasterKill}, replayed ${r.counters.replayed}, processed ${r.counters.processed}, failed ${r.counters.failed}, ` +
      `refused ${Object.values(r.counters.dropped).reduce((a, b) => a + b, 0)}, dead-lettered ${r.counters.deadLettered}`,
    ''
  ]
  for (const s of [...r.sinks, ...(r.kept ? [r.kept] : [])]) lines.push(...sinkLines(s))
  lines.push(...countLines(r.counts), '')
  for (const doubt of r.doubts) lines.push(`  note: ${doubt}`)
  lines.push(`verdict: ${verdictLine(r)}`, `  (${(r.timings.totalMs / 1000).toFixed(1)} s)`)
  // --keep kept it whatever the verdict (a mismatch names its logs in the verdict).
  if (r.workDir && r.verdict === 'exactly once') lines.push(`  work directory kept: ${r.workDir}`)
  lines.push('')
  return lines.join('\n')
}

function verdictLine (r) {
  if (r.verdict === 'exactly once') return 'every record stored exactly once, every refusal counted by its reason'
  if (r.verdict === 'inconclusive') return 'INCONCLUSIVE: what was compared agrees, but not every sample could be checked (see the notes)'
  const where = [...r.failing, ...(r.counts.verdict === 'exact' ? [] : ['the message outcomes'])]
  return `MISMATCH in ${where.join(', ')}: not every record was stored exactly once (logs: ${r.logs.join(', ')})`
}

function sinkLines (s) {
  const title = `${s.collection} (${s.kind === 'kept' ? 'kept state' : s.kind})`
  const lines = [`  ${title.padEnd(32)} ${s.verdict === 'exact' ? 'exact   ' : 'MISMATCH'}  ${summaryText(s)}`]
  // Stored values come from the samples, captured traffic a sender wrote: escaped for the terminal.
  for (const d of s.differences) lines.push(`      ${printable(differenceText(d))}`)
  if (s.differenceCount > s.differences.length) lines.push(`      … ${s.differenceCount - s.differences.length} more differences`)
  for (const what of s.notCompared) lines.push(`      not compared: ${what}`)
  return lines
}

function summaryText (s) {
  const m = s.summary
  switch (s.kind) {
    case 'documents': return `${m.stored} documents stored of ${m.expected} expected: ${m.missing} missing, ${m.duplicates} stored twice, ${m.unexpected} not expected`
    case 'updates': return `${m.stored} documents (${m.expected} expected)${Object.entries(m.totals).map(([f, t]) => `; ${f} ${num(t.stored)} of ${num(t.expected)}`).join('')}`
    case 'counters': return `${m.metrics} metrics, counted ${m.counted.stored} of ${m.counted.expected}`
    case 'streams': return `${m.pairs} pairs of ends in ${m.streams} streams; packets: sides ${m.packets.stored}, counter ${m.packets.counted}, of ${m.packets.expected}`
    default: return `${m.stored} names (${m.expected} expected)`
  }
}

// A sum as a person reads it: 163872.95, not 163872.94999999998.
function num (n) {
  return Number.isInteger(n) ? String(n) : String(Number(n.toPrecision(12)))
}

function differenceText (d) {
  const { what, message, ...rest } = d
  const fields = Object.entries(rest).map(([k, v]) => `${k} ${typeof v === 'object' && v !== null ? JSON.stringify(v) : v}`).join(', ')
  return `${what}: ${fields}${message ? ` (sample message #${message})` : ''}`
}

function countLines (counts) {
  const lines = [`  ${'message outcomes'.padEnd(32)} ${counts.verdict === 'exact' ? 'exact   ' : 'MISMATCH'}  ${counts.rows.map((r) => `${r.what} ${r.counted} of ${r.expected}`).join('; ')}`]
  for (const problem of counts.problems) lines.push(`      ${problem}`)
  return lines
}

module.exports = { buildReport, formatReport, addCounts, checkCounts }
