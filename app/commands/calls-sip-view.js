'use strict'

// The SIP calls in `collector calls --serve` (runs in the CLI; the server
// and its page frame are calls-view.js's): `/sip`, a search form and the
// SIP calls it finds, failed ones included; `/sip/call?id=<Call-ID>`, one
// call: what SIP says of it, its media, its SIP ladder drawn as SVG on the
// server (one column per address:port, one arrow per message in capture
// order, each linking to its raw text) and its messages;
// `/sip/call.txt` and `/sip/call.pcap` export them. No script; every string
// a sender chose goes through `escape`.

const { parseTime } = require('./common')
const { listCalls, partyText, outcomeText, outcomeCounts, durationText, OUTCOME_FILTERS } = require('./calls-list')
const { ladderOf, legsOf, shortened, cutNote } = require('./calls-ladder')
const { sipPcap } = require('./sip-pcap')
const { BAND_ORDER } = require('./calls-read')
const { rawTextShown } = require('../terminal-text')

const ORDERS = ['verdict', 'time']
const MAX_TEXT = 1024 // a query value longer than a stored Call-ID can be finds nothing
const COLUMN = 260 // px between the ladder's columns
const ROW = 30 // px between its arrows
const MAX_STREAMS = 8 // a call's streams drawn on its page (one per pair of SSRCs: re-INVITEs, forks)

/**
 * The search page: `{ status, title, parts }` (calls-view.js frames them).
 * Query: `call-id`, `number`, `outcome`, `band`, `order`, `from` and `to`
 * (times; else the view's window), `page`; a bad value is a 400 naming
 * it. A number and an outcome are asked of the database, so that the
 * `maxRead` calls a page load reads at most are calls that match. `bounds`
 * (`finalUnseenAfter`, `byeUnseenAfter`: `collector calls`'s) tell the calls whose
 * end was never seen as of the page load.
 */
async function searchPage (db, query, { since, worst, maxRead, collections, escape, table, bounds = {} }) {
  const filters = {}
  for (const [param, name, allowed] of SEARCH_PARAMS) {
    const value = query.get(param)
    if (value === null || value === '') continue
    if (value.length > MAX_TEXT || (allowed && !allowed.includes(value))) return badQuery(`${param} ${allowed ? `is one of ${allowed.join(', ')}` : `is at most ${MAX_TEXT} characters`}`, escape)
    filters[name] = value
  }
  for (const name of ['from', 'to']) {
    if (filters[name] !== undefined && Number.isNaN(parseTime(filters[name]))) return badQuery(`${name} is a time, e.g. 2026-11-27T05:00:00Z`, escape)
  }
  const page = query.get('page') || '1'
  if (!PAGE.test(page)) return badQuery('page is 1, 2, …', escape)
  const until = filters.to === undefined ? Date.now() : parseTime(filters.to)
  const from = filters.from === undefined ? until - since : parseTime(filters.from)
  if (!(Math.abs(from) <= MAX_TIME && Math.abs(until) <= MAX_TIME)) return badQuery('from and to are times a Date holds', escape)
  // As `collector calls` refuses it (QA: the page listed "0 calls from 10:10 to 10:00").
  if (until < from) return badQuery(filters.to === undefined ? 'from is in the future (give to for a window ending later)' : 'to is before from', escape)
  const first = (Number(page) - 1) * worst
  const { from: _, to: __, ...searched } = filters
  const report = await listCalls(db, { ...searched, since: from, until, offset: first, limit: worst, maxRead, collections, ...bounds })
  const rows = report.shown.map((shown) => sipRow(shown, table))
  const counts = outcomeCounts(report.outcomes)
  // A Call-ID is read whatever its time: the window is not named (QA: one named and not applied).
  const when = filters.callId !== undefined ? `with Call-ID ${escape(filters.callId)}` : `active from ${new Date(from).toISOString()} to ${new Date(until).toISOString()}`
  const other = report.otherSip > 0 ? `; ${report.otherSip} SIP exchange${report.otherSip === 1 ? '' : 's'} of no call (no INVITE: OPTIONS, REGISTER, …) not listed` : ''
  const bound = report.readAll ? '' : ` (the ${maxRead} most recent that match read: narrow the time range for older ones)`
  const showing = report.total > rows.length ? ` Showing ${rows.length ? `${first + 1}–${first + rows.length}` : 'none'}.` : ''
  return {
    status: 200,
    title: 'Find a call',
    parts: [
      '<h1>Find a call</h1><p><a href="/">Calls by quality</a></p>',
      form(filters, escape),
      `<p id="summary">${report.total} call${report.total === 1 ? '' : 's'} ${when}${bound}; SIP calls ${report.sipTotal}: ${counts}${other}.${showing}</p>`,
      resultTable(rows, escape),
      // The next pages read the same window: `to` fixed at this page's now.
      searchPager({ ...filters, to: filters.to ?? new Date(until).toISOString() }, Number(page), first + worst < report.total)
    ]
  }
}

// The query parameters of the search, the option each sets and its allowed values.
const SEARCH_PARAMS = [['call-id', 'callId'], ['number', 'number'], ['outcome', 'outcome', OUTCOME_FILTERS], ['band', 'band', BAND_ORDER], ['order', 'order', ORDERS], ['from', 'from'], ['to', 'to']]
const PAGE = /^[1-9]\d{0,5}$/
const MAX_TIME = 8.64e15 // ms either side of 1970 a Date holds

function badQuery (text, escape) {
  return { status: 400, title: 'Bad query', parts: [`<p>bad query: ${escape(text)}. <a href="/sip">Search again</a></p>`] }
}

// Previous and next pages of the same search.
function searchPager (filters, page, more) {
  const params = SEARCH_PARAMS.filter(([, name]) => filters[name] !== undefined).map(([param, name]) => `${param}=${encodeURIComponent(filters[name])}`)
  const at = (p) => `/sip?${[...params, `page=${p}`].join('&amp;')}`
  const links = [page > 1 && `<a id="prev" href="${at(page - 1)}">← previous page</a>`, more && `<a id="next" href="${at(page + 1)}">next page →</a>`].filter(Boolean)
  return links.length ? `<p id="pager">${links.join(' · ')}</p>` : ''
}

function form (filters, escape) {
  const text = (name, label, key, hint = '') => `<label>${label} <input name="${name}" value="${escape(filters[key] || '')}"${hint ? ` placeholder="${hint}"` : ''}></label>`
  const select = (name, label, choices, key) => `<label>${label} <select name="${name}"><option value="">any</option>${choices.map((c) => `<option${filters[key] === c ? ' selected' : ''}>${c}</option>`).join('')}</select></label>`
  return `<form id="search" method="get" action="/sip">${text('call-id', 'Call-ID', 'callId')} ${text('number', 'Number', 'number')} ${select('outcome', 'Outcome', OUTCOME_FILTERS, 'outcome')} ` +
    `${select('band', 'Band', BAND_ORDER, 'band')} ${select('order', 'Order', ORDERS, 'order')} ${text('from', 'From', 'from', '2026-11-27T05:00:00Z')} ${text('to', 'To', 'to', 'now')} <button type="submit">Find</button></form>`
}

function sipRow ({ outcome, doc, analytics }, table) {
  const party = (p) => partyText(p) || '-'
  const cells = doc ? table.row(doc, analytics) : {}
  if (!outcome) return { callId: null, caller: '-', callee: '-', start: '-', duration: cells.duration || '-', sip: 'RTCP only', mos: cells.mos || '-', band: cells.band || 'unknown', streamId: doc ? String(doc._id) : null }
  return {
    callId: outcome.callId,
    caller: party(outcome.caller),
    callee: party(outcome.callee),
    start: outcome.startedAt ? outcome.startedAt.toISOString().slice(0, 19).replace('T', ' ') : '-',
    duration: durationText(outcome.durationMs, { atLeastMs: outcome.minDurationMs }),
    sip: outcomeText(outcome),
    mos: cells.mos || '-',
    band: cells.band || 'unknown'
  }
}

function resultTable (rows, escape) {
  const heads = ['Call-ID', 'Caller', 'Callee', 'Start (UTC)', 'Duration', 'SIP', 'MOS', 'Band']
  const body = rows.map((r) => {
    const link = r.callId !== null
      ? `<a href="/sip/call?id=${encodeURIComponent(r.callId)}">${escape(r.callId)}</a>`
      : (r.streamId ? `<a href="/call?id=${r.streamId}">RTCP only</a>` : '-')
    const cells = [r.caller, r.callee, r.start, r.duration, r.sip, r.mos].map((v) => `<td class="l">${escape(v)}</td>`).join('')
    return `<tr><td class="l">${link}</td>${cells}<td class="l ${escape(r.band)}">${escape(r.band)}</td></tr>`
  }).join('\n')
  return `<table id="sip-calls"><thead><tr>${heads.map((h) => `<th class="l">${h}</th>`).join('')}</tr></thead><tbody>${body}</tbody></table>`
}

/**
 * One call's page: `{ status, title, parts }`; 404 when no call has that Call-ID.
 */
async function callPage (db, callId, { collections, escape, media = null, bounds = {} }) {
  const missing = { status: 404, title: 'No such call', parts: [`<p>No SIP call ${escape(callId || '')}. <a href="/sip">Find a call</a></p>`] }
  if (!callId || callId.length > MAX_TEXT) return missing
  const report = await listCalls(db, { callId, since: 0, limit: 1, collections, ...bounds })
  const legs = await legsOf(db.collection(collections.calls), callId)
  const ladder = await ladderOf(db.collection(collections.messages), callId, collections.logs ? db.collection(collections.logs) : null, { legs })
  const shown = report.shown.find((s) => s.outcome)
  if (!shown && ladder.stored === 0 && ladder.logs.length === 0) return missing
  const streams = await db.collection(collections.streams).find({ $or: [{ 'from.callId': callId }, { 'to.callId': callId }] }, { limit: MAX_STREAMS }).toArray()
  const id = encodeURIComponent(callId)
  return {
    status: 200,
    title: `Call ${callId}`,
    parts: [
      `<h1>Call ${escape(callId)}</h1><p><a href="/sip">Find a call</a> · export: <a id="export-text" href="/sip/call.txt?id=${id}">text</a> · <a id="export-pcap" href="/sip/call.pcap?id=${id}">pcap</a></p>`,
      shown ? outcomeList(shown.outcome, escape) : '',
      legs.length > 1 ? `<p id="legs">One conversation of ${legs.length} legs (bridged by a B2BUA), drawn together below: ${legs.map((leg, i) => leg === callId ? `${i + 1}. ${escape(leg)} (this one)` : `${i + 1}. <a href="/sip/call?id=${encodeURIComponent(leg)}">${escape(leg)}</a>`).join(' · ')}</p>` : '',
      `<h2>Media</h2><p id="media">${streams.length ? streams.map((s) => `<a href="/call?id=${s._id}">${escape(s.from && s.from.ID)} – ${escape(s.to && s.to.ID)}</a>`).join(' · ') : 'none reported (no RTCP with this Call-ID)'}</p>`,
      ...(media ? streams.flatMap((s, i) => [`<h3>Stream ${i + 1}: ${escape(s.from && s.from.ID)} – ${escape(s.to && s.to.ID)}, per direction</h3>`, ...media(s, i + 1)]) : []),
      `<h2>SIP ladder</h2><p>${ladder.stored} messages stored${ladder.stored > ladder.messages.length ? `, the first ${ladder.messages.length} drawn` : ''}.</p>`,
      ladderSvg(ladder.messages, escape, legs),
      ladder.logs.length ? `<h2>What agents logged or reported</h2><table id="logs">${ladder.logs.map((l) => `<tr><td class="l">${escape(new Date(l.at).toISOString())}</td><td class="l">${escape(l.kind)}</td><td class="l">${escape(l.node || l.src || '-')}</td><td class="l"><pre>${escape(l.text)}</pre></td></tr>`).join('')}</table>` : '',
      '<h2>Messages</h2>',
      ladder.messages.map((m, i) => `<h3 id="m${i + 1}">${i + 1}. ${m.leg === undefined ? '' : `[leg ${legs.indexOf(m.leg) + 1}] `}${escape(m.src)} → ${escape(m.dst)} ${escape(new Date(m.at).toISOString())}</h3><pre>${escape(m.raw + cutNote(m))}</pre>`).join('\n')
    ]
  }
}

function outcomeList (o, escape) {
  const party = (p) => partyText(p) || '-'
  const time = (t) => t ? new Date(t).toISOString() : '-'
  const items = [
    ['Caller', party(o.caller)], ['Callee', party(o.callee)], ['Outcome', outcomeText(o)],
    ['Invited', time(o.invitedAt)], ['Ringing after', o.ringingMs === null ? '-' : `${(o.ringingMs / 1000).toFixed(3)} s`],
    ['Answered', time(o.answeredAt)], ['Ended', time(o.endedAt)], ['Duration', durationText(o.durationMs, { atLeastMs: o.minDurationMs })],
    ['Copies received', String(o.duplicates)], ['Messages past the cap', String(o.overCap)],
    // A forked INVITE's extra answers, which the caller ACKs and then ends with a BYE: not the call's end.
    ...(o.otherDialogByes ? [['BYEs of other dialogs', String(o.otherDialogByes)]] : [])
  ]
  return `<table id="outcome">${items.map(([k, v]) => `<tr><th class="l">${k}</th><td class="l">${escape(v)}</td></tr>`).join('')}</table>`
}

/**
 * The ladder: one column per address:port in the order they first appear,
 * one arrow per message in capture order, its time from the first and its
 * first line, each a link to the message's text below (#m<n>).
 */
function ladderSvg (messages, escape, legs = []) {
  if (messages.length === 0) return '<p>No SIP messages stored.</p>'
  const columns = []
  for (const m of messages) for (const end of [m.src, m.dst]) if (!columns.includes(end)) columns.push(end)
  const x = (end) => 120 + COLUMN * columns.indexOf(end)
  const width = 120 + COLUMN * (columns.length - 1) + 120
  const height = 60 + ROW * messages.length + 10
  const t0 = new Date(messages[0].at).getTime()
  const heads = columns.map((end) => `<text class="end" x="${x(end)}" y="20" text-anchor="middle">${escape(end)}</text>` +
    `<line x1="${x(end)}" y1="30" x2="${x(end)}" y2="${height - 5}" stroke="#999" stroke-dasharray="4 3"/>`).join('')
  const arrows = messages.map((m, i) => {
    const y = 60 + ROW * i
    const [from, to] = [x(m.src), x(m.dst)]
    const line = m.leg === undefined ? m.firstLine : `[${legs.indexOf(m.leg) + 1}] ${m.firstLine}`
    const label = shortened(line, 48)
    const color = m.method ? '#1f77b4' : (m.status >= 300 ? '#d62728' : '#2ca02c')
    const mid = (from + to) / 2
    return `<a href="#m${i + 1}"><g class="message"><title>${escape(m.firstLine)}</title>` +
      `<text x="4" y="${y + 4}">+${((new Date(m.at).getTime() - t0) / 1000).toFixed(3)}s</text>` +
      `<line class="arrow" x1="${from}" y1="${y}" x2="${to}" y2="${y}" stroke="${color}" stroke-width="2" marker-end="url(#head)"/>` +
      `<text x="${from === to ? from + 6 : mid}" y="${y - 5}" text-anchor="${from === to ? 'start' : 'middle'}">${escape(label)}</text></g></a>`
  }).join('\n')
  const defs = '<defs><marker id="head" markerUnits="userSpaceOnUse" markerWidth="10" markerHeight="8" refX="9" refY="4" orient="auto"><path d="M0,0 L10,4 L0,8 z" fill="#444"/></marker></defs>'
  return `<svg id="ladder" xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}">${defs}${heads}${arrows}</svg>`
}

// The messages of the call's conversation (its legs, as its page draws them), for the exports.
async function conversation (db, callId, collections, options = {}) {
  const legs = await legsOf(db.collection(collections.calls), callId || '')
  return ladderOf(db.collection(collections.messages), callId || '', null, { ...options, legs })
}

/**
 * The call's messages (those of its conversation's legs) as text: each with
 * its time and addresses, then its raw text, safe to print to a terminal
 * and shown as the call's page shows it (rawTextShown: what a sender put
 * there that a terminal acts on or does not show is escape text, and then
 * a backslash `\\`; its lines stay lines). The bytes as captured are the pcap's.
 */
async function callText (db, callId, { collections }) {
  const { messages } = await conversation(db, callId, collections)
  if (messages.length === 0) return null
  return messages.map((m) => rawTextShown(`${new Date(m.at).toISOString()} ${m.src} -> ${m.dst} ${m.transport || ''}\n${m.raw}${cutNote(m)}${m.raw.endsWith('\n') && !m.truncated ? '' : '\n'}`)).join('\n')
}

/** The call's messages (its conversation's) as a pcap file (sip-pcap.js), or null. */
async function callPcap (db, callId, { collections }) {
  const { messages } = await conversation(db, callId, collections, { bytes: true })
  return messages.length === 0 ? null : sipPcap(messages)
}

/**
 * The /sip search of `collector calls`'s flags (`{ callId, number, … }`, as
 * the command's config names them), or undefined when none is given:
 * `--serve` opens the view, and says where these flags' search is.
 * @returns {string|undefined}
 */
function searchPath (config) {
  const params = SEARCH_PARAMS.filter(([, name]) => config[name] !== undefined).map(([param, name]) => `${param}=${encodeURIComponent(config[name])}`)
  return params.length === 0 ? undefined : `/sip?${params.join('&')}`
}

module.exports = { searchPath, searchPage, callPage, callText, callPcap, ladderSvg }
