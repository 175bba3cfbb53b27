'use strict'

const { MongoClient } = require('mongodb')
const { BAND_ORDER, worstCalls, callsByMinute } = require('./calls-read')
const { listCalls, partyText, outcomeText, outcomeCounts, OUTCOME_FILTERS } = require('./calls-list')
const { ladderOf, legsOf, printLadder, SIP_MESSAGES, CALL_LOGS } = require('./calls-ladder')
const { pingMongo, resolveDatabase, uriDatabase } = require('../../lib/mongo/resolve-mongo')
const { redactUri, hasPassword } = require('../../lib/mongo/redact-uri')
const { databaseNameProblem } = require('../../lib/mongo/database-name')
const { nameProblem } = require('../../lib/master/options')
const { flagTypes } = require('../../lib/shared/value-types')
const { commandConfig, usageError, formatTable, formatUptime, parseTime } = require('./common')
const { printable, printableJson } = require('../terminal-text')
const { createNoopLogger } = require('../../lib/shared/logger')
const { END_UNSEEN_AFTER } = require('../../collectors/hep/calls')
const { STREAM_SETTINGS } = require('../../workers/mongo-settings')
const HEP_SETTINGS = require('../../collectors/hep').Collector.settings

// The collections the collectors write by default (their settings declare them).
const STREAMS = STREAM_SETTINGS.streamsCollection.default
const CALLS = HEP_SETTINGS.worker.callsCollection.default

const USAGE = 'collector calls [NAME] [--worst 10] [--since 1h | --from TIME [--to TIME]] [--call-id ID] [--number N] [--outcome answered|failed|cancelled|no-answer|no-final-seen|no-bye-seen] [--final-unseen-after 4m] [--bye-unseen-after 1h] [--band good|fair|poor|unknown] [--order verdict|time] [--per-minute] [--json] [--serve PORT [--host 127.0.0.1] [--web-config FILE]] [--database DB] [--mongo-uri URI]'
const DESCRIPTION = [
  'The worst RTCP calls (streams) with a report within --since, worst first by',
  'the call\'s verdict (MOS CALL: the E-model over the whole call\'s loss and',
  'delay, the worse direction); calls without a MOS yet come last.',
  'FROM is the media\'s sender when only one end sends. Loss F→T is the media',
  'from FROM to TO over the call, as TO reports it; T→F the reverse.',
  'JITTER MAX: the highest of either end; RTT AVG: measured both ways (~: only',
  'twice one direction); MOS 10s: the worst 10 s of media of either direction.',
  'A MOS shown as ≤N had no round trip measured: it holds the delay the ends',
  'add (jitter buffer, codec) and no network delay, which can only lower it',
  '(--json: analytics.delayBasis \'endpoints\', else \'measured\'). Every MOS is',
  'ITU-T G.107\'s, on its scale (--json: analytics.model, and each side\'s',
  'ieSource, the table of its Ie and Bpl); analytics.delayByDirection gives',
  'each direction\'s delay: the receiving end\'s buffer and codec, and its',
  'part of the round trip as the collector sees it (split \'collector-relative\',',
  'or \'none\' when RTCP cannot split it).',
  'The footer counts every call in the window by the band of its verdict:',
  'good (MOS ≥ 4.0), fair (3.6 to 4.0), poor (< 3.6), unknown (no MOS).',
  'Every SIP call the hep collector stored (SIP over HEP) is listed, with or',
  'without media: answered, failed (3xx-6xx), cancelled, no answer (ringing:',
  'an 18x came), with its Call-ID, caller and callee (From and To of the',
  'INVITE, host without port), the SIP outcome (final status, who hung up),',
  'its ringing time (INVITE to the first 18x or answer) and its duration from',
  'SIP (answer to BYE), joined to the worst of its streams. A call whose end',
  'was never captured is told from a live one by how long it has been quiet',
  'now: with no final response and no SIP for --final-unseen-after, it reads',
  '"no final response seen" (no-final-seen), not ringing; answered, with no',
  'BYE and no SIP nor media report for --bye-unseen-after, "no BYE seen"',
  '(no-bye-seen, among the answered), its duration "≥" answer to last',
  'activity. --call-id shows one call whatever its time, with its SIP',
  'messages as a ladder (time, from -> to, first line); --number the calls',
  'whose caller or callee user is N,',
  'or whose digits end with N\'s digits less its leading zeros (00, 0:',
  'dialling prefixes) when N is written as a number; --outcome and --band keep one class;',
  '--order time lists the newest first.',
  '--per-minute lists instead, per UTC minute of the window, the calls with',
  'media that minute by the band of their worst report in it, each call once.',
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
  since: { type: 'duration', min: 1, default: '1h', description: 'calls whose last report (endTime) or last SIP message (lastSeen) is this recent (30s, 15m, 2h, 1d)' },
  from: { type: 'string', validate: timeProblem, description: 'calls active from this time (ISO 8601, e.g. 2026-11-27T05:00Z) instead of --since' },
  to: { type: 'string', validate: timeProblem, description: 'with --from: calls active until this time (default now)' },
  callId: { type: 'string', description: 'only the call with this SIP Call-ID (hep collector), whatever its time, with its SIP ladder' },
  number: { type: 'string', description: 'only calls whose caller or callee user (From/To of the INVITE) is this, e.g. +4930123, or whose digits end with its digits (hep collector)' },
  outcome: { type: 'string', choices: OUTCOME_FILTERS, description: `only SIP calls of this outcome (${OUTCOME_FILTERS.join(', ')})` },
  finalUnseenAfter: { type: 'duration', min: 1, default: formatWindow(END_UNSEEN_AFTER.final), description: 'a call with no final response and no SIP message for this long reads "no final response seen", not ringing (a proxy gives up after 3 minutes: RFC 3261 Timer C)' },
  byeUnseenAfter: { type: 'duration', min: 1, default: formatWindow(END_UNSEEN_AFTER.bye), description: 'an answered call with no BYE, no SIP message and no report of its media for this long reads "no BYE seen", not in progress' },
  band: { type: 'string', choices: BAND_ORDER, description: `only calls whose verdict is in this band (${BAND_ORDER.join(', ')})` },
  order: { type: 'string', choices: ['verdict', 'time'], default: 'verdict', description: 'verdict: worst first (no MOS last); time: newest first' },
  perMinute: { type: 'boolean', default: false, description: 'per UTC minute of the window, the calls with media by the band of their worst report that minute' },
  serve: { type: 'port', description: 'serve the view (the worst calls, calls by band per minute, one call per minute; /sip: find a SIP call, its ladder, its exports) as HTML on this port (0: a free one) until Ctrl-C' },
  host: { type: 'string', default: '127.0.0.1', description: 'address of --serve (loopback unless given)' },
  webConfig: { type: 'path', description: 'TLS and basic auth of --serve, as --metrics-web-config (the Prometheus exporter toolkit\'s web config)' },
  json: { type: 'boolean', default: false, description: 'one JSON object per call (its identifying fields, its SIP outcome, analytics as a closed stream stores them; with --call-id its legs, SIP messages and agents\' logs); the footer goes to stderr' },
  database: { type: 'string', validate: databaseNameProblem, description: 'database name (default: the one the URI names, else collector)' },
  mongoUri: {
    type: 'string',
    secret: true,
    description: 'MongoDB URI without a password (else MONGODB_URI; else a server on 127.0.0.1:27017)',
    validate: (uri) => hasPassword(uri) ? 'must not contain a password (it would show in ps): put the URI in the MONGODB_URI environment variable instead' : undefined
  }
}, crossChecks)

// Flags that cannot go together: two windows; --per-minute (every call with
// media of --since, by band) beside a flag it would not apply.
const NOT_PER_MINUTE = Object.freeze({ callId: 'call-id', number: 'number', outcome: 'outcome', band: 'band', order: 'order', worst: 'worst', from: 'from', to: 'to', serve: 'serve', finalUnseenAfter: 'final-unseen-after', byeUnseenAfter: 'bye-unseen-after' })
const NOT_WITH_CALL_ID = Object.freeze({ number: 'number', outcome: 'outcome', band: 'band', order: 'order', worst: 'worst', since: 'since', from: 'from', to: 'to' })
function crossChecks (config, given) {
  const problems = []
  if (given.has('since') && (given.has('from') || given.has('to'))) problems.push({ flag: 'since', message: 'one window: --since, or --from TIME [--to TIME], not both' })
  const ignored = config.perMinute ? Object.keys(NOT_PER_MINUTE).filter((name) => given.has(name)) : []
  if (config.serve !== undefined && config.json) problems.push({ flag: 'json', message: 'is for the terminal; --serve shows the view as HTML (its one-call pages link their exports)' })
  // One call, whatever its time: the window and the filters of a list would be ignored, or half applied (QA).
  const withCallId = config.callId !== undefined && !config.perMinute ? Object.keys(NOT_WITH_CALL_ID).filter((name) => given.has(name)) : []
  if (withCallId.length > 0) problems.push({ flag: 'call-id', message: `reads that one call whatever its time, and takes no ${withCallId.map((name) => `--${NOT_WITH_CALL_ID[name]}`).join(', ')}` })
  if (ignored.length > 0) problems.push({ flag: 'per-minute', message: `counts every call with media of the --since window by band, and takes no ${ignored.map((name) => `--${NOT_PER_MINUTE[name]}`).join(', ')}` })
  return problems
}

const COLUMNS = [
  { key: 'from', title: 'FROM', align: 'left' },
  { key: 'to', title: 'TO', align: 'left' },
  { key: 'state', title: 'STATE', align: 'left' },
  { key: 'duration', title: 'DURATION' },
  { key: 'lossFT', title: 'LOSS% F→T' },
  { key: 'lossTF', title: 'LOSS% T→F' },
  { key: 'jitter', title: 'JITTER MAX ms' },
  { key: 'rtt', title: 'RTT AVG ms' },
  { key: 'mos', title: 'MOS CALL' },
  { key: 'window', title: 'MOS 10s' },
  { key: 'band', title: 'BAND', align: 'left' }
]

/**
 * `collector calls [NAME] [--worst N] [--since 1h] [--json]`: the worst
 * calls of the window and the window's calls by MOS band. Exit 0; 1 when
 * no database answers, or --call-id names no stored call; 2 on a usage mistake.
 */
async function run (argv, { env = process.env, out = process.stdout, err = process.stderr } = {}) {
  if (argv[0] === '--help' || argv[0] === '-h') return printHelp(out)
  const named = argv.length > 0 && !argv[0].startsWith('-')
  const name = named ? argv[0] : 'rtcp'
  if (nameProblem(name)) throw usageError(`NAME ${JSON.stringify(name)}: ${nameProblem(name)}`)
  const config = parseFlags(named ? argv.slice(1) : argv, env)
  if (config.help) return printHelp(out)
  timeWindow(config) // its mistakes before any connection

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
    const streams = client.db(database).collection(STREAMS)
    if (config.serve !== undefined) return await serve(client.db(database), config, out, err)
    if (config.perMinute) return printMinutes(await callsByMinute(streams, { since: Date.now() - config.since }), config, out, err)
    return await printCalls(client.db(database), config, { out, err })
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

// The calls of the window (calls-list.js) as a table or JSON lines, and
// the footer; with --call-id, the call's SIP ladder too (calls-ladder.js).
async function printCalls (db, config, { out, err }) {
  const window = timeWindow(config)
  const report = await listCalls(db, { ...config, ...window, now: window.now, limit: config.worst, collections: { calls: CALLS, streams: STREAMS } })
  const legs = config.callId !== undefined ? await legsOf(db.collection(CALLS), config.callId) : null
  const ladder = legs ? await ladderOf(db.collection(SIP_MESSAGES), config.callId, db.collection(CALL_LOGS), { legs }) : null
  // SIP was searched where the collector stores calls (the hep collector's), whatever matched.
  const searchedSip = report.sipTotal > 0 || report.otherSip > 0 || config.number !== undefined || config.outcome !== undefined || config.callId !== undefined ||
    // (named again here: mongo-java-server answers every collection, whatever the filter)
    (await db.listCollections({ name: CALLS }, { nameOnly: true }).toArray()).some((c) => c.name === CALLS)
  const where = searchedSip ? `${db.databaseName}.${CALLS} and ${STREAMS}` : `${db.databaseName}.${STREAMS}`
  if (config.callId !== undefined && report.total === 0 && ladder.messages.length === 0) {
    const none = `no call with Call-ID ${printable(config.callId)} is stored in ${db.databaseName} (${CALLS}, ${STREAMS}, ${SIP_MESSAGES})`
    if (ladder.logs.length === 0) {
      err.write(`collector: ${none}\n`)
      return 1
    }
    // An agent's log naming a call whose SIP was not captured here: found all the same.
    err.write(`collector: ${none}; ${ladder.logs.length} line${ladder.logs.length === 1 ? '' : 's'} that agents logged name it (${CALL_LOGS})\n`)
  }
  const footer = footerLine(report, { since: config.since, window, where, order: config.order, callId: config.callId, searchedSip, filters: { number: config.number, outcome: config.outcome, band: config.band } })
  if (config.json) {
    for (const shown of report.shown) out.write(printableJson(jsonLine(shown, ladder)) + '\n')
    // What is stored of a call with no call document (its messages or agents' logs alone).
    if (report.shown.length === 0 && ladder) out.write(printableJson({ callId: config.callId, ...ladderJson(ladder) }) + '\n')
    err.write(footer + '\n')
    return 0
  }
  const columns = report.sipTotal > 0 ? [...SIP_COLUMNS, ...COLUMNS] : COLUMNS
  const rows = report.shown.map(({ doc, analytics, outcome }) => ({ ...(doc ? row(doc, analytics) : {}), ...sipRow(outcome, doc) }))
  if (rows.length > 0) out.write(formatTable(columns, rows))
  if (ladder) printLadder(ladder, out)
  out.write(footer + '\n')
  return 0
}

const SIP_COLUMNS = [
  { key: 'callId', title: 'CALL-ID', align: 'left' },
  { key: 'caller', title: 'CALLER', align: 'left' },
  { key: 'callee', title: 'CALLEE', align: 'left' },
  { key: 'start', title: 'START (UTC)', align: 'left' },
  { key: 'ring', title: 'RING' },
  { key: 'sip', title: 'SIP', align: 'left' }
]

// --from/--to, else --since: epoch ms, and `now`, the time of reading that
// tells a quiet call from a live one. --to alone, or before --from, is a usage mistake.
function timeWindow ({ since, from, to }) {
  const now = Date.now()
  if (from === undefined) {
    if (to !== undefined) throw usageError('--to: needs --from (the window is --from TIME [--to TIME], or --since) (see collector calls --help)')
    return { since: now - since, until: now, now }
  }
  const window = { since: parseTime(from), until: to === undefined ? now : parseTime(to), explicit: true, now }
  if (window.until < window.since) {
    throw usageError(to === undefined ? `--from: ${from} is in the future (give --to for a window ending later) (see collector calls --help)` : `--to: ${to} is before --from ${from} (see collector calls --help)`)
  }
  return window
}

function timeProblem (text) {
  return Number.isNaN(parseTime(text)) ? 'must be a time, e.g. 2026-11-27T05:00:00Z' : undefined
}

function callIdOf (doc) {
  return (doc.from && doc.from.callId) || (doc.to && doc.to.callId) || null
}

function sipRow (outcome, doc) {
  if (!outcome) return { callId: doc ? callIdOf(doc) : null }
  return {
    callId: outcome.callId,
    caller: partyText(outcome.caller),
    callee: partyText(outcome.callee),
    start: outcome.startedAt ? outcome.startedAt.toISOString().slice(0, 19).replace('T', ' ') : null,
    ring: outcome.ringingMs === null ? null : formatDuration(outcome.ringingMs),
    sip: outcomeText(outcome),
    // A SIP call's duration is the SIP one (answer to BYE), not its media's span; with no BYE seen, at least answer to last activity.
    duration: sipDuration(outcome)
  }
}

// Unknown (null) when not answered, or answered with its answer not seen; 'open' while its BYE may come.
function sipDuration (outcome) {
  if (!outcome.answered || outcome.answerUnseen) return null
  return outcome.durationMs !== null ? formatDuration(outcome.durationMs) : outcome.endUnseen ? `≥${formatDuration(outcome.minDurationMs)}` : 'open'
}

// The HTML view until SIGINT or SIGTERM (calls-view.js).
async function serve (db, config, out, err) {
  const { CallsViewServer } = require('./calls-view')
  const { searchPath } = require('./calls-sip-view')
  const collections = { calls: CALLS, streams: STREAMS, messages: SIP_MESSAGES, logs: CALL_LOGS }
  // What the view has to say (a failed page, a refused login) goes to stderr, a line each.
  const logger = createNoopLogger()
  for (const level of ['info', 'warn', 'error']) logger[level] = (fields, msg) => err.write(`${level}: ${printable(msg)}\n`)
  const bounds = { finalUnseenAfter: config.finalUnseenAfter, byeUnseenAfter: config.byeUnseenAfter }
  const server = new CallsViewServer(db.collection(STREAMS), { host: config.host, port: config.serve, webConfig: config.webConfig, since: config.since, worst: config.worst, logger, table: TABLE, db, collections, bounds })
  const { address, port } = await server.start()
  const web = server.web
  const base = `${web && web.tls ? 'https' : 'http'}://${address.includes(':') ? `[${address}]` : address}:${port}`
  out.write(`serving the calls at ${base}/ (Ctrl-C stops)\n`)
  // Search flags beside --serve were ignored without a word: where their search is.
  const search = searchPath({ ...config, order: config.order === 'time' ? 'time' : undefined })
  if (search !== undefined) out.write(`the calls your flags ask for: ${base}${search}\n`)
  await new Promise((resolve) => {
    process.once('SIGINT', resolve)
    process.once('SIGTERM', resolve)
  })
  await server.stop()
  return 0
}

function printMinutes (minutes, config, out, err) {
  const footer = `${minutes.length} minute${minutes.length === 1 ? '' : 's'} with calls in the last ${formatWindow(config.since)}`
  if (config.json) {
    for (const minute of minutes) out.write(printableJson(minute) + '\n')
    err.write(footer + '\n') // as the list's footer: on stderr, the JSON lines alone on stdout
    return 0
  }
  const at = (key) => `${key.slice(0, 4)}-${key.slice(4, 6)}-${key.slice(6, 8)} ${key.slice(8, 10)}:${key.slice(10, 12)}`
  const columns = [{ key: 'minute', title: 'MINUTE (UTC)', align: 'left' }, ...BAND_ORDER.map((band) => ({ key: band, title: band.toUpperCase() }))]
  if (minutes.length > 0) out.write(formatTable(columns, minutes.map((m) => ({ ...m, minute: at(m.minute) }))))
  out.write(footer + '\n')
  return 0
}

function row (doc, a) {
  // A side holds what its end received: the end that reports alone is the receiver.
  const swap = Boolean(a.from && !a.to)
  const [sender, receiver] = swap ? [doc.to, doc.from] : [doc.from, doc.to]
  const [atReceiver, atSender] = swap ? [a.from, a.to] : [a.to, a.from]
  const sides = [a.from, a.to].filter(Boolean)
  const jitters = sides.filter((s) => s.jitterMs).map((s) => s.jitterMs.max)
  return {
    from: endpoint(sender),
    to: endpoint(receiver),
    state: doc.active ? 'open' : doc.endReason === 'segment' ? 'segment' : `ended${doc.endReason ? ' ' + doc.endReason : ''}`, // a segment: the call goes on in the next
    duration: formatDuration(a.durationMs),
    lossFT: percent(atReceiver && atReceiver.lossRate), // what the receiving end reports
    lossTF: percent(atSender && atSender.lossRate),
    jitter: fixed(jitters.length ? Math.max(...jitters) : null, 1),
    rtt: averageRtt(sides),
    // Without a measured round trip the MOS has no network delay in it: at most that.
    mos: upTo(a.delayBasis, fixed(a.mos, 2)),
    window: upTo(a.worstWindow && a.worstWindow.delayBasis, fixed(a.worstWindow && a.worstWindow.mos, 2)),
    band: a.band
  }
}

// Measured round trips over both ends, else the one-direction estimates marked `~`.
function averageRtt (sides) {
  for (const [key, mark] of [['rttMs', ''], ['rttEstimatedMs', '~']]) {
    const known = sides.filter((s) => s[key])
    const count = known.reduce((n, s) => n + s[key].count, 0)
    if (count > 0) return mark + fixed(known.reduce((sum, s) => sum + s[key].avg * s[key].count, 0) / count, 1)
  }
  return null
}

function endpoint (side) {
  if (!side) return null
  return [side.ID, side.IP_ADDRESS, side.cname].filter((part) => part !== undefined && part !== null && part !== '').join(' ')
}

function upTo (delayBasis, text) {
  return text !== null && delayBasis === 'endpoints' ? `≤${text}` : text
}

function percent (rate) {
  return rate === null || rate === undefined ? null : (rate * 100).toFixed(1)
}

function fixed (value, digits) {
  return value === null || value === undefined ? null : value.toFixed(digits)
}

function formatDuration (ms) {
  if (!(ms > 0)) return '0.0s' // as the rest under a minute: one column, one format
  return ms < 60000 ? `${(ms / 1000).toFixed(1)}s` : formatUptime(ms)
}

/**
 * The JSON line of one call: what identifies it, its SIP dialog when the
 * hep collector stored one (`callId`, `caller`, `callee`, `sip`: status,
 * outcome, who hung up, times, durations, duplicates), with --call-id its
 * SIP messages in capture order (`messages`), and the analytics of its
 * worst stream (callAnalytics; null when it has no media).
 */
function jsonLine ({ doc, analytics, outcome, streams }, ladder) {
  const side = (s) => s ? { ID: s.ID, IP_ADDRESS: s.IP_ADDRESS, cname: s.cname } : null
  const callId = outcome ? outcome.callId : doc && callIdOf(doc)
  const { callId: _, caller, callee, ...sip } = outcome || {}
  return {
    ...(doc ? { _id: String(doc._id) } : {}),
    ...(callId ? { callId } : {}),
    ...(outcome ? { caller, callee, sip } : {}),
    ...(ladder && outcome && ladder.callId === callId ? ladderJson(ladder) : {}),
    ...(doc
      ? { pairKey: doc.pairKey, active: doc.active, from: side(doc.from), to: side(doc.to), startTime: doc.startTime, endTime: doc.endTime, endedAt: doc.endedAt, endReason: doc.endReason }
      : {}),
    streams,
    analytics
  }
}

function ladderJson (ladder) {
  return { legs: ladder.legs, messages: ladder.messages, messagesShown: ladder.messages.length, messagesStored: ladder.stored, logs: ladder.logs }
}

function footerLine ({ total, bands, shown, sipTotal = 0, outcomes = null, otherSip = 0 }, { since, window = null, where, order = 'verdict', callId, searchedSip = false, filters = {} }) {
  const counts = `good ${bands.good} (MOS ≥ 4.0), fair ${bands.fair} (3.6–4.0), poor ${bands.poor} (< 3.6), unknown ${bands.unknown} (no MOS${bands.unknown ? ', listed last' : ''})`
  const showing = total > shown.length ? `; showing the ${order === 'time' ? 'newest' : 'worst'} ${shown.length}` : ''
  const when = callId !== undefined ? `with Call-ID ${printable(callId)}` : window && window.explicit ? `active from ${new Date(window.since).toISOString()} to ${new Date(window.until).toISOString()}` : `in the last ${formatWindow(since)}`
  const sip = sipTotal > 0 ? `; SIP calls ${sipTotal}: ${outcomeCounts(outcomes)}` : ''
  const other = otherSip > 0 ? `; ${otherSip} SIP exchange${otherSip === 1 ? '' : 's'} of no call (no INVITE: OPTIONS, REGISTER, …) not listed, --call-id reads one` : ''
  const what = sipTotal > 0 || searchedSip ? 'with SIP or a report' : 'with a report'
  // The filters that chose them, as given (QA: a --number that matched nothing went unnamed).
  const chosen = Object.entries(filters).filter(([, value]) => value !== undefined).map(([name, value]) => `${name} ${printable(value)}`)
  const by = chosen.length > 0 ? `, ${chosen.join(', ')},` : ''
  return `${total} call${total === 1 ? '' : 's'} ${what} ${when}${by} in ${where}: ${counts}${sip}${other}${showing}`
}

function oneLine (text) {
  return String(text).replace(/\s+/g, ' ').trim()
}

// The table the view shows (calls-view.js, which cannot require this file: a cycle).
const TABLE = Object.freeze({ row, columns: COLUMNS })

module.exports = { run, USAGE, worstCalls, callsByMinute, footerLine, TABLE }
