'use strict'

const { MongoClient } = require('mongodb')
const { callAnalytics } = require('../../collectors/rtcp/quality-analytics')
const { pingMongo, resolveDatabase, uriDatabase } = require('../../lib/mongo/resolve-mongo')
const { redactUri, hasPassword } = require('../../lib/mongo/redact-uri')
const { NAME_PATTERN } = require('../../lib/master/options')
const { flagTypes } = require('../../configs/flag-types')
const { commandConfig, usageError, formatTable, formatUptime } = require('./common')

const USAGE = 'collector calls [NAME] [--worst 10] [--since 1h] [--json] [--database DB] [--mongo-uri URI]'
const DESCRIPTION = [
  'The worst RTCP calls (streams) with a report within --since: lowest MOS',
  '(the minimum over both ends) first; calls without a MOS yet come last.',
  'Loss F→T is the media from FROM to TO, as TO reports it; T→F the reverse.',
  'Jitter: the highest of either end; RTT: the average; MOS min / avg: the worse end.',
  'The footer counts every call in the window by band: good (MOS ≥ 4.0),',
  'fair (3.6 to 4.0), poor (< 3.6), unknown (no MOS).',
  'NAME (default rtcp) is the collector\'s name; it does not change where calls',
  'are read (a collector\'s name names its counters, not its database): the',
  'database is --database, else the one the URI names, else collector, as for',
  'the collector. The server: --mongo-uri, else MONGODB_URI, else',
  'mongodb://127.0.0.1:27017 (this command never starts one).'
].join('\n')
const LOCAL_URI = 'mongodb://127.0.0.1:27017'
const CONNECT_TIMEOUT_MS = 5000
const formatWindow = flagTypes.duration.format

const Config = commandConfig(USAGE, {
  worst: { type: 'integer', min: 1, default: 10, description: 'how many calls to show, worst first' },
  since: { type: 'duration', min: 1, default: '1h', description: 'calls whose last report (endTime) is this recent (30s, 15m, 2h)' },
  json: { type: 'boolean', default: false, description: 'one JSON object per call (its identifying fields and callAnalytics); the footer goes to stderr' },
  database: { type: 'string', description: 'database name (default: the one the URI names, else collector)' },
  mongoUri: {
    type: 'string',
    secret: true,
    description: 'MongoDB URI without a password (else MONGODB_URI; else a server on 127.0.0.1:27017)',
    validate: (uri) => hasPassword(uri) ? 'must not contain a password (it would show in ps): put the URI in the MONGODB_URI environment variable instead' : undefined
  }
})

const COLUMNS = [
  { key: 'from', title: 'FROM', align: 'left' },
  { key: 'to', title: 'TO', align: 'left' },
  { key: 'state', title: 'STATE', align: 'left' },
  { key: 'duration', title: 'DURATION' },
  { key: 'lossFT', title: 'LOSS% F→T' },
  { key: 'lossTF', title: 'LOSS% T→F' },
  { key: 'jitter', title: 'JITTER ms' },
  { key: 'rtt', title: 'RTT ms' },
  { key: 'mosMin', title: 'MOS MIN' },
  { key: 'mosAvg', title: 'MOS AVG' },
  { key: 'band', title: 'BAND', align: 'left' }
]

const BAND_ORDER = ['good', 'fair', 'poor', 'unknown']

/**
 * `collector calls [NAME] [--worst N] [--since 1h] [--json]`: the worst
 * calls of the window and the window's calls by MOS band. Exit 0; 1 when
 * no database answers; 2 on a usage mistake.
 */
async function run (argv, { env = process.env, out = process.stdout, err = process.stderr } = {}) {
  if (argv[0] === '--help' || argv[0] === '-h') return printHelp(out)
  const named = argv.length > 0 && !argv[0].startsWith('-')
  const name = named ? argv[0] : 'rtcp'
  if (!NAME_PATTERN.test(name)) throw usageError(`NAME ${JSON.stringify(name)}: must be letters, digits, ".", "_" and "-", starting with a letter or digit`)
  const config = parseFlags(named ? argv.slice(1) : argv, env)
  if (config.help) return printHelp(out)

  const uri = config.mongoUri || env.MONGODB_URI || LOCAL_URI
  if (uri === LOCAL_URI && !await pingMongo(LOCAL_URI)) {
    err.write(`collector: no MongoDB answers at ${LOCAL_URI} (start one with \`collector db start\`, or give --mongo-uri or MONGODB_URI)\n`)
    return 1
  }
  const database = resolveDatabase(config.database, uri) || uriDatabase(uri)
  const client = newClient(uri, config.mongoUri ? '--mongo-uri' : 'MONGODB_URI')
  try {
    try {
      await client.connect()
      await client.db('admin').command({ ping: 1 })
    } catch (error) {
      err.write(`collector: cannot reach MongoDB at ${redactUri(uri)}: ${oneLine(error.message)}\n`)
      return 1
    }
    const report = await worstCalls(client.db(database).collection('streams'), { since: Date.now() - config.since, worst: config.worst })
    const footer = footerLine(report, { since: config.since, where: `${database}.streams` })
    if (config.json) {
      for (const { doc, analytics } of report.shown) out.write(JSON.stringify(jsonLine(doc, analytics)) + '\n')
      err.write(footer + '\n')
    } else {
      if (report.shown.length > 0) out.write(formatTable(COLUMNS, report.shown.map(({ doc, analytics }) => row(doc, analytics))))
      out.write(footer + '\n')
    }
    return 0
  } finally {
    await client.close().catch(() => {})
  }
}

// A URI the driver cannot parse is a usage mistake, said without the URI.
function newClient (uri, source) {
  try {
    return new MongoClient(uri, { serverSelectionTimeoutMS: CONNECT_TIMEOUT_MS, connectTimeoutMS: CONNECT_TIMEOUT_MS })
  } catch (error) {
    throw usageError(`${source}: not a MongoDB URI: ${oneLine(error.message)}`)
  }
}

// Flag mistakes as one line naming each flag: `--worst: must be at least 1`.
function parseFlags (argv, env) {
  try {
    return Config.parse(argv, env)
  } catch (error) {
    if (error.code !== 'ERR_INVALID_CONFIG') throw error
    const problems = error.problems || []
    const text = problems.length ? problems.map((p) => (p.flag ? `--${p.flag}: ${p.message}` : p.message)).join('; ') : oneLine(error.message)
    throw usageError(`${text} (see collector calls --help)`)
  }
}

function printHelp (out) {
  const [first, ...rest] = new Config([]).help().split('\n')
  out.write([first, '', DESCRIPTION, ...rest].join('\n'))
  return 0
}

/**
 * Every call of the window by band, and the `worst` lowest by MOS min (no
 * MOS last; ties: the most recent first). One pass reads only the MOS
 * figures of every call in the window; the shown ones are then read whole.
 * @param {import('mongodb').Collection} streams
 * @param {{ since: number, worst: number }} options since: epoch ms
 * @returns {Promise<{ total: number, bands: Object<string, number>, shown: Array<{ doc: object, analytics: object }> }>}
 */
async function worstCalls (streams, { since, worst }) {
  const filter = { endTime: { $gte: new Date(since) } }
  const projection = { endTime: 1, 'from.quality.mos': 1, 'to.quality.mos': 1 }
  const bands = Object.fromEntries(BAND_ORDER.map((band) => [band, 0]))
  const ranked = []
  for await (const doc of streams.find(filter, { projection })) {
    const { mosMin, band } = callAnalytics(doc)
    bands[band]++
    ranked.push({ _id: doc._id, mosMin, endTime: doc.endTime })
  }
  ranked.sort(byWorst)
  const ids = ranked.slice(0, worst).map((r) => r._id)
  const docs = ids.length ? await streams.find({ _id: { $in: ids } }).toArray() : []
  const shown = docs.map((doc) => ({ doc, analytics: callAnalytics(doc), endTime: doc.endTime }))
    .map((c) => ({ ...c, mosMin: c.analytics.mosMin }))
    .sort(byWorst)
    .map(({ doc, analytics }) => ({ doc, analytics }))
  return { total: ranked.length, bands, shown }
}

function byWorst (a, b) {
  if (a.mosMin !== b.mosMin) {
    if (a.mosMin === null) return 1
    if (b.mosMin === null) return -1
    return a.mosMin - b.mosMin
  }
  return new Date(b.endTime || 0) - new Date(a.endTime || 0)
}

function row (doc, a) {
  const sides = [a.from, a.to].filter(Boolean)
  const worse = sides.filter((s) => s.mos).sort((x, y) => x.mos.min - y.mos.min)[0] || null
  const jitters = sides.filter((s) => s.jitterMs).map((s) => s.jitterMs.max)
  const rtts = sides.filter((s) => s.rttMs)
  const rttCount = rtts.reduce((n, s) => n + s.rttMs.count, 0)
  return {
    from: endpoint(doc.from),
    to: endpoint(doc.to),
    state: doc.active ? 'open' : `ended${doc.endReason ? ' ' + doc.endReason : ''}`,
    duration: formatDuration(a.durationMs),
    lossFT: percent(a.to && a.to.lossRate), // what TO received
    lossTF: percent(a.from && a.from.lossRate), // what FROM received
    jitter: fixed(jitters.length ? Math.max(...jitters) : null, 1),
    rtt: fixed(rttCount ? rtts.reduce((sum, s) => sum + s.rttMs.avg * s.rttMs.count, 0) / rttCount : null, 1),
    mosMin: fixed(a.mosMin, 2),
    mosAvg: fixed(worse && worse.mos.avg, 2),
    band: a.band
  }
}

function endpoint (side) {
  if (!side) return null
  return [side.ID, side.IP_ADDRESS, side.cname].filter((part) => part !== undefined && part !== null && part !== '').join(' ')
}

function percent (rate) {
  return rate === null || rate === undefined ? null : (rate * 100).toFixed(1)
}

function fixed (value, digits) {
  return value === null || value === undefined ? null : value.toFixed(digits)
}

function formatDuration (ms) {
  if (!(ms > 0)) return '0s'
  return ms < 60000 ? `${(ms / 1000).toFixed(1)}s` : formatUptime(ms)
}

/** The JSON line of one call: what identifies it, and callAnalytics. */
function jsonLine (doc, analytics) {
  const side = (s) => s ? { ID: s.ID, IP_ADDRESS: s.IP_ADDRESS, cname: s.cname } : null
  return {
    _id: String(doc._id),
    pairKey: doc.pairKey,
    active: doc.active,
    from: side(doc.from),
    to: side(doc.to),
    startTime: doc.startTime,
    endTime: doc.endTime,
    endedAt: doc.endedAt,
    endReason: doc.endReason,
    analytics
  }
}

function footerLine ({ total, bands, shown }, { since, where }) {
  const counts = `good ${bands.good} (MOS ≥ 4.0), fair ${bands.fair} (3.6–4.0), poor ${bands.poor} (< 3.6), unknown ${bands.unknown} (no MOS${bands.unknown ? ', listed last' : ''})`
  const showing = total > shown.length ? `; showing the worst ${shown.length}` : ''
  return `${total} call${total === 1 ? '' : 's'} with a report in the last ${formatWindow(since)} in ${where}: ${counts}${showing}`
}

function oneLine (text) {
  return String(text).replace(/\s+/g, ' ').trim()
}

module.exports = { run, USAGE, worstCalls, footerLine }
