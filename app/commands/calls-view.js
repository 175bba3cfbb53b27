'use strict'

// `collector calls --serve`: the calls as plain HTML and inline SVG, drawn
// on the server (no script, no CDN, no build step). `/` lists the worst of
// the window's most recent calls and charts the calls by band per minute;
// `/call?id=<_id>` charts one call's MOS, loss and jitter per minute. Runs
// in the CLI process; served with the metrics endpoint's TLS, basic auth
// and security headers (its web config), the page's style allowed by hash.
//
// A page load costs at most `limit` calls, whatever the window holds
// (recentCalls in calls-read.js says why): `/?page=N` pages the worst of
// the calls read, `worst` a page; `/?before=<ms>` reads the window's next
// older calls, the cursor a page links to when the window holds more.
// `/sip` and `/sip/call` are the SIP calls' search and call pages
// (calls-sip-view.js: the form, the list, the ladder, the exports).

const crypto = require('node:crypto')
const { ObjectId } = require('mongodb')
const MetricsServer = require('../../lib/master/metrics-server')
const { callAnalytics, minuteJitterMs } = require('../../collectors/rtcp/quality-analytics')
const { flagTypes } = require('../../lib/shared/value-types')
const { BAND_ORDER, recentCalls, readWhole, tallyMinutes, byWorst } = require('./calls-read')
const sipView = require('./calls-sip-view')
const { rawTextShown, printable } = require('../terminal-text')
const { isUnreachable } = require('../../lib/mongo/unreachable')

const reply = MetricsServer.reply
const HTML = 'text/html; charset=utf-8'
const COLORS = Object.freeze({ good: '#2ca02c', fair: '#f0b400', poor: '#d62728', unknown: '#9e9e9e' })
const BANDS = BAND_ORDER
const STYLE = 'body{font:14px sans-serif;margin:24px;color:#222}table{border-collapse:collapse}' +
  'td,th{padding:3px 8px;border-bottom:1px solid #ddd;text-align:right}td.l,th.l{text-align:left}' +
  'svg text{font:11px sans-serif}.band{display:inline-block;width:10px;height:10px;margin:0 4px 0 12px}' +
  BANDS.map((band) => `.band.${band}{background:${COLORS[band]}}`).join('') +
  'form label{margin-right:10px}pre{background:#f6f6f6;padding:8px;overflow-x:auto;white-space:pre-wrap}svg .end{font-weight:bold}'
// The one style the CSP allows: no 'unsafe-inline', and no style attributes (a hash does not cover them).
const STYLE_SRC = `'sha256-${crypto.createHash('sha256').update(STYLE, 'utf8').digest('base64')}'`
/** How many calls a page load reads at most (the benchmark, benchmarks/calls-view.js, measured the cost). */
const READ_LIMIT = 2000
const PAGE = /^[1-9]\d{0,5}$/
const CURSOR = /^\d{1,15}$/
const formatWindow = flagTypes.duration.format

/**
 * The view's HTTP endpoint, served by a MetricsServer given the view's
 * routes (its binding, TLS, basic auth, refusal counting and security
 * headers are the metrics endpoint's).
 */
class CallsViewServer {
  /**
   * @param {import('mongodb').Collection} streams
   * @param {{ host: string, port: number, webConfig?: string, since: number, worst: number, limit?: number, logger?: object,
   *   table: { row: Function, columns: object[] }, db?: import('mongodb').Db, collections?: { calls: string, streams: string, messages: string },
   *   bounds?: { finalUnseenAfter?: number, byeUnseenAfter?: number } }} options
   *   since: the window in ms; worst: rows a page; limit: calls a page load reads at most (READ_LIMIT);
   *   table: the table of `collector calls` (its TABLE); db and collections: where the SIP pages read;
   *   bounds: how long a call whose end was not seen is quiet before the SIP pages say so (callOutcome)
   */
  constructor (streams, { host, port, webConfig, since, worst, limit = READ_LIMIT, logger, table, db = null, collections = null, bounds = {} }) {
    // The search form submits to the view itself (GET /sip).
    this.http = new MetricsServer(null, { host, port, name: 'calls', webConfig, logger, what: 'calls view', webConfigFlag: '--web-config', contentSecurity: { 'style-src': STYLE_SRC, 'form-action': "'self'" }, route: (path, req, res) => this.route(path, req, res) })
    Object.assign(this, { streams, since, worst, limit, table, db, collections, bounds, logger: this.http.logger })
    this.unreachable = false // the last page found the database down (said once in the log)
    this.previous = null // the last read with more calls than a page: where the next may narrow its range (recentCalls)
    this.reading = new Map() // cursor (null: the newest) → the read under way
  }

  /** Binds (HTTPS and basic auth with a web config); resolves with the address. */
  start () {
    return this.http.start()
  }

  stop () {
    return this.http.stop()
  }

  /** The web config in use (TLS, users), or null. */
  get web () {
    return this.http.web
  }

  // A page the database cannot answer now (down, restarting): 503, to try
  // again, said as such; which server and why is the log's (a page anyone
  // who reaches the port reads), once per outage. Other failures: 500.
  async route (path, req, res) {
    try {
      const served = await this.page(path, req, res)
      this.unreachable = false
      return served
    } catch (err) {
      if (!isUnreachable(err)) throw err
      if (!this.unreachable) this.logger.warn({ error: printable(err.message) }, `calls view: the database does not answer (${printable(err.message)}); pages answer 503 until it does`)
      this.unreachable = true
      return reply(res, 503, 'text/plain', 'the database does not answer now: try again shortly (the log of `collector calls --serve` says more)\n', { 'retry-after': '5' })
    }
  }

  async page (path, req, res) {
    const query = new URL(req.url, 'http://view').searchParams
    if (path === '/call') return this.callPage(query.get('id'), res)
    if (path.startsWith('/sip') && this.db) return this.sipRoute(path, query, res)
    if (path !== '/') return reply(res, 404, 'text/plain', 'not found: try / or /call?id=<stream _id>\n')
    const page = query.get('page') || '1'
    const before = query.get('before')
    if (!PAGE.test(page) || !(before === null || CURSOR.test(before))) {
      return reply(res, 400, 'text/plain', 'bad query: / takes page=N (1, 2, …) and before=<epoch ms> (the links of a page)\n')
    }
    return reply(res, 200, HTML, await this.overview({ page: Number(page), before: before === null ? null : Number(before) }))
  }

  // The SIP pages (calls-sip-view.js), framed as the others.
  async sipRoute (path, query, res) {
    const options = { since: this.since, worst: this.worst, maxRead: this.limit, collections: this.collections, escape, table: this.table, bounds: this.bounds, media: (doc, n) => mediaParts(doc, `-${n}`) }
    if (path === '/sip' || path === '/sip/call') {
      const { status, title, parts } = path === '/sip' ? await sipView.searchPage(this.db, query, options) : await sipView.callPage(this.db, query.get('id'), options)
      return reply(res, status, HTML, pageOf(title, parts))
    }
    if (path === '/sip/call.txt' || path === '/sip/call.pcap') {
      const text = path.endsWith('.txt')
      const body = text ? await sipView.callText(this.db, query.get('id'), options) : await sipView.callPcap(this.db, query.get('id'), options)
      if (body === null) return reply(res, 404, 'text/plain', 'no SIP messages stored for that Call-ID\n')
      if (text) return reply(res, 200, 'text/plain; charset=utf-8', body)
      return reply(res, 200, 'application/vnd.tcpdump.pcap', body, { 'content-disposition': `attachment; filename="${pcapFileName(query.get('id'))}"` })
    }
    return reply(res, 404, 'text/plain', 'not found: try /sip, /sip/call?id=<Call-ID>\n')
  }

  // Page `page` of the worst of the calls read: the `limit` most recent of
  // the window, ending before `before` when given; the chart on the first.
  async overview ({ page, before }) {
    const read = await this.readCalls(before)
    const first = (page - 1) * this.worst
    const ranked = read.calls.slice().sort(byWorst)
    const shown = await readWhole(this.streams, ranked.slice(first, first + this.worst))
    // With the SIP pages, a call's Call-ID links to its SIP call.
    const callIdOf = (doc) => (doc.from && doc.from.callId) || (doc.to && doc.to.callId) || null
    const rows = shown.map(({ doc, analytics }) => ({ id: String(doc._id), cells: { ...this.table.row(doc, analytics), sipCall: this.db ? callIdOf(doc) : null } }))
    const columns = this.db ? [...this.table.columns, { key: 'sipCall', title: 'CALL-ID', align: 'left' }] : this.table.columns
    const parts = ['<h1>Calls</h1>', this.db ? '<p><a id="find" href="/sip">Find a call</a>: every SIP call, answered or not, by Call-ID, number or outcome. Below, the calls\' media by its RTCP reports, worst first.</p>' : '', summary(read, { window: this.since, before, first, shown: rows.length }), worstTable(columns, rows), pager(read, { page, before, more: first + this.worst < read.calls.length })]
    if (before === null) parts.push(...await this.chart(read))
    return pageOf('Calls', parts)
  }

  // The calls a page shows (recentCalls), read once for all the page loads
  // that ask for them while they are read: ten people on the first page
  // cost one read, whichever page of its ranking each is on.
  readCalls (before) {
    if (!this.reading.has(before)) {
      const until = Date.now()
      const since = until - this.since
      const reading = recentCalls(this.streams, { since, before, limit: this.limit, minutes: before === null, previous: this.previous })
        .then((read) => {
          if (read.complete !== null) this.previous = { complete: read.complete, newest: read.newest }
          return { ...read, since, until }
        })
        .finally(() => this.reading.delete(before))
      this.reading.set(before, reading)
    }
    return this.reading.get(before)
  }

  // Whole minutes of the window only; with more calls than a page reads,
  // only the minutes those calls cover whole (after `complete`).
  async chart ({ since, until, ...read }) {
    const from = Math.ceil(Math.max(since, read.complete === null ? since : read.complete + 1) / 60000) * 60000
    const minutes = await tallyMinutes(read.calls.map((c) => c.doc), { since: from, until })
    const covered = read.complete === null ? '' : `<p>Since ${timeLabel(from)} UTC: the minutes the calls read cover whole.</p>`
    return ['<h2>Calls per minute by band</h2>', covered, bandChart(minutes, { since: from, until }), legend()]
  }

  async callPage (id, res) {
    const doc = ObjectId.isValid(id || '') ? await this.streams.findOne({ _id: new ObjectId(id) }) : null
    if (!doc) return reply(res, 404, HTML, pageOf('No such call', [`<p>No call ${escape(id || '')}. <a href="/">All calls</a></p>`]))
    return reply(res, 200, HTML, pageOf(`Call ${doc.from.ID} – ${doc.to.ID}`, [
      `<h1>Call ${escape(doc.from.ID)} – ${escape(doc.to.ID)}</h1><p><a href="/">All calls</a></p>`,
      ...mediaParts(doc)
    ]))
  }
}

// Each side's clock and codec, with where each came from (docs/call-quality.md, Clock rate and codec).
function mediaText (doc, a) {
  const sides = [['from', doc.from, a.from], ['to', doc.to, a.to]].filter(([, , q]) => q)
  return sides.map(([name, side, q]) => `${name} ${side.ID}: clock ${q.clockRate} Hz (${q.clockRateSource}), codec ${q.codec} (${q.codecSource}${q.format ? `; SDP ${q.format}` : ''}; Ie, Bpl: ${q.ieSource})`).join('; ')
}

// Each direction's delay (docs/call-quality.md, Delay by direction): the
// receiving end's buffer and codec, its term of the round trip when both
// were measured, and whether RTCP could split the round trip at all.
function delayText (d) {
  if (d.directions.length === 0) return 'no report'
  const ms = (x) => x === null ? '?' : `${fmt(x, 1)} ms`
  const parts = d.directions.map((x) => `${x.from}→${x.to}: endpoints ${ms(x.endpointsMs)}` +
    (d.split === 'none' ? '' : ` + path ${ms(x.pathMs)} = ${ms(x.mouthToEarMs)}`))
  const rtt = d.roundTripMs === null ? 'no round trip measured' : `round trip ${ms(d.roundTripMs)}`
  const split = d.split === 'none'
    ? 'not split by direction (both directions\' terms were not measured)'
    : 'split as the collector sees it (exact only if both ends are as far from it)'
  const longer = d.directions.find((x) => x.side === d.longer)
  return `${parts.join('; ')}; ${rtt}, ${split}${longer ? `; longer: ${longer.from}→${longer.to} (${d.longerBasis})` : ''}`
}

// Without a measured round trip the verdict holds no network delay: at most that, and said.
function verdictText (a) {
  if (a.delayBasis !== 'endpoints') return `${fmt(a.mos, 2)} (${a.band}; ${a.model})`
  return `≤${fmt(a.mos, 2)} (${a.band}; ${a.model}; no round trip measured: the ends' delay only)`
}

/**
 * One stream's verdict, clock and codec, and its MOS, loss and jitter per
 * minute, a line per side; `suffix` tells the charts of several streams on
 * one page apart.
 */
function mediaParts (doc, suffix = '') {
  const a = callAnalytics(doc)
  const sides = [['from', doc.from], ['to', doc.to]].filter(([, side]) => side && side.quality && side.quality.minutes)
  const series = (read) => sides.map(([label, side]) => ({ label: `${label} ${side.ID}`, points: minuteSeries(side.quality.minutes, (b) => read(b, side)) }))
  return [
    `<p id="verdict${suffix}">MOS ${verdictText(a)}; worst 10 s ${fmt(a.worstWindow && a.worstWindow.mos, 2)}; worst report ${fmt(a.mosMin, 2)}</p>`,
    `<p id="media${suffix}">${escape(mediaText(doc, a))}</p>`,
    `<p id="delay${suffix}">Delay by direction: ${escape(delayText(a.delayByDirection))}</p>`,
    '<h2>MOS per minute (average)</h2>', lineChart(`mos${suffix}`, series((b) => b.reports > 0 ? b.mosSum / b.reports : null), { min: 1, max: 4.5 }),
    '<h2>Loss per minute (highest, %)</h2>', lineChart(`loss${suffix}`, series((b) => b.lossMax * 100), { min: 0 }),
    '<h2>Jitter per minute (highest, ms)</h2>', lineChart(`jitter${suffix}`, series((b, side) => minuteJitterMs(side, b)), { min: 0 })
  ]
}

function pageOf (title, parts) {
  return `<!doctype html><html><head><meta charset="utf-8"><title>${escape(title)}</title><style>${STYLE}</style></head><body>${parts.join('\n')}</body></html>\n`
}

// What the calls read are, by band, and which of them the rows are.
function summary ({ calls, older }, { window, before, first, shown }) {
  const bands = Object.fromEntries(BANDS.map((band) => [band, 0]))
  for (const call of calls) bands[call.band]++
  const counts = BANDS.map((band) => `${band} ${bands[band]}`).join(', ')
  const last = `the last ${formatWindow(window)}`
  const which = before === null
    ? (older === null ? `${calls.length} calls with an RTCP report in ${last}` : `The window holds more calls than a page reads: these are the ${calls.length} most recent calls of the window (${last})`)
    : `${older === null ? calls.length : `The ${calls.length} most recent`} calls of ${last} whose last report was before ${timeLabel(before, 19)} UTC`
  const rows = shown > 0 ? ` The worst by their verdict (MOS CALL) first: ${first + 1} to ${first + shown}.` : ''
  return `<p id="summary">${which}: ${counts}.${rows}</p>`
}

// Links to the neighbouring pages of the ranking, and to the older calls of the window when a page could not read them all.
function pager ({ older }, { page, before, more }) {
  const at = (p) => `/?page=${p}${before === null ? '' : `&amp;before=${before}`}`
  const links = [
    page > 1 && `<a id="prev" href="${at(page - 1)}">← previous page (worse)</a>`,
    more && `<a id="next" href="${at(page + 1)}">next page (better) →</a>`,
    older !== null && `<a id="older" href="/?before=${older}">older calls of the window</a>`,
    before !== null && '<a id="newest" href="/">the most recent calls</a>'
  ].filter(Boolean)
  return links.length ? `<p id="pages">${links.join(' · ')}</p>` : ''
}

function worstTable (columns, rows) {
  const head = columns.map((c) => `<th class="${c.align === 'left' ? 'l' : ''}">${escape(c.title)}</th>`).join('')
  const body = rows.map(({ id, cells }) => '<tr>' + columns.map((c, i) => {
    const text = escape(cells[c.key] === null || cells[c.key] === undefined ? '-' : String(cells[c.key]))
    const sipLink = c.key === 'sipCall' && cells.sipCall
    const content = i === 0 ? `<a href="/call?id=${encodeURIComponent(id)}">${text}</a>` : sipLink ? `<a class="sip" href="/sip/call?id=${encodeURIComponent(cells.sipCall)}">${text}</a>` : text
    return `<td class="${c.align === 'left' ? 'l' : ''}${c.key === 'band' ? ' ' + text : ''}">${content}</td>`
  }).join('') + '</tr>').join('\n')
  return `<table id="worst"><thead><tr>${head}</tr></thead><tbody>${body}</tbody></table>`
}

// One stacked bar per minute of the window (`since` to `until`, ms): the
// calls of each band, good at the bottom; a minute without calls is a gap.
function bandChart (minutes, { since, until }, width = 900, height = 220) {
  const first = Math.floor(since / 60000)
  const slots = Math.max(1, Math.floor(until / 60000) - first + 1)
  const top = Math.max(1, ...minutes.map((m) => BANDS.reduce((n, b) => n + m[b], 0)))
  const step = (width - 60) / slots
  const barWidth = Math.max(1, Math.min(40, step * 0.8))
  const scale = (height - 40) / top
  const bars = minutes.map((m) => {
    const x = 40 + (minuteOf(m.minute) - first) * step
    let y = height - 20
    return BANDS.filter((band) => m[band] > 0).map((band) => {
      const h = m[band] * scale
      y -= h
      return `<rect class="${band}" x="${x.toFixed(1)}" y="${y.toFixed(1)}" width="${barWidth.toFixed(1)}" height="${h.toFixed(1)}" fill="${COLORS[band]}"><title>${minuteLabel(m.minute)} ${band} ${m[band]}</title></rect>`
    }).join('')
  }).join('\n')
  // A window over a day, or across midnight, says the date too (a day's axis read "00:03 … 00:03").
  const dated = new Date(first * 60000).toISOString().slice(0, 10) !== new Date((first + slots - 1) * 60000).toISOString().slice(0, 10)
  const axis = (ms) => dated ? new Date(ms).toISOString().slice(5, 16).replace('T', ' ') : timeLabel(ms)
  const label = (minute, x, anchor) => `<text class="axis" x="${x}" y="${height - 4}" text-anchor="${anchor}">${axis(minute * 60000)}</text>`
  const empty = minutes.length ? '' : `<text x="40" y="${height / 2}">no calls in the window</text>`
  return `<svg id="bands" xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}"><line x1="38" y1="${height - 20}" x2="${width - 20}" y2="${height - 20}" stroke="#444"/><text x="34" y="24" text-anchor="end">${top}</text>${bars}${label(first, 40, 'start')}${label(first + slots - 1, width - 20, 'end')}${empty}</svg>`
}

// The minute (since the epoch) of a `YYYYMMDDHHmm` key.
function minuteOf (key) {
  return Date.UTC(+key.slice(0, 4), +key.slice(4, 6) - 1, +key.slice(6, 8), +key.slice(8, 10), +key.slice(10, 12)) / 60000
}

function timeLabel (ms, end = 16) {
  return new Date(ms).toISOString().slice(11, end)
}

function legend () {
  return '<p>' + BANDS.map((band) => `<span class="band ${band}"></span>${band}`).join('') + '</p>'
}

// `[{ minute, value }]` of a side's per-minute buckets, oldest first, without the minutes `read` has no value for.
function minuteSeries (minutes, read) {
  return Object.keys(minutes).sort().map((minute) => ({ minute, value: read(minutes[minute]) })).filter((p) => typeof p.value === 'number' && Number.isFinite(p.value))
}

// One polyline per side over the minutes of both, with its points as circles.
function lineChart (id, series, { min, max }, width = 900, height = 160) {
  const keys = [...new Set(series.flatMap((s) => s.points.map((p) => p.minute)))].sort()
  const values = series.flatMap((s) => s.points.map((p) => p.value))
  const hi = max !== undefined ? max : Math.max(min + 1, ...values)
  const x = (minute) => 40 + (keys.length > 1 ? keys.indexOf(minute) / (keys.length - 1) : 0.5) * (width - 80)
  const y = (value) => height - 20 - (value - min) / (hi - min) * (height - 40)
  const strokes = ['#1f77b4', '#ff7f0e']
  const lines = series.map((s, i) => `<polyline class="${id}" fill="none" stroke="${strokes[i]}" stroke-width="2" points="${s.points.map((p) => `${x(p.minute).toFixed(1)},${y(p.value).toFixed(1)}`).join(' ')}"/>` +
    s.points.map((p) => `<circle cx="${x(p.minute).toFixed(1)}" cy="${y(p.value).toFixed(1)}" r="4" fill="${strokes[i]}"><title>${escape(s.label)} ${minuteLabel(p.minute)} ${p.value.toFixed(2)}</title></circle>`).join('') +
    `<text x="${width - 30}" y="${14 + 13 * i}" text-anchor="end" fill="${strokes[i]}">${escape(s.label)}</text>`).join('\n')
  return `<svg id="${id}" xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}"><line x1="38" y1="${height - 20}" x2="${width - 40}" y2="${height - 20}" stroke="#444"/><text x="34" y="24" text-anchor="end">${fmt(hi, 1)}</text><text x="34" y="${height - 20}" text-anchor="end">${fmt(min, 1)}</text>${lines}</svg>`
}

function minuteLabel (key) {
  return `${key.slice(8, 10)}:${key.slice(10, 12)}`
}

function fmt (value, digits) {
  return typeof value === 'number' ? value.toFixed(digits) : '-'
}

// Sender text in HTML: its bidi overrides, invisible characters and
// controls as visible escape text (terminal-text.js), then markup escaped.
function escape (text) {
  return rawTextShown(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
}

// The name a call's pcap is saved under: its Call-ID, a sender's, in
// characters every file system and header take, neither hidden nor an option.
function pcapFileName (callId) {
  return `${callId.replace(/[^A-Za-z0-9.-]/g, '_').replace(/^[.-]/, '_').slice(0, 100)}.pcap`
}

module.exports = { pcapFileName, CallsViewServer }
