'use strict'

// The calls view (`collector calls --serve`) against hostile and heavy use
// (issue 36, item 5): every response tells a browser to run no script, load
// nothing, frame nothing, sniff nothing and send no referrer, with the
// page's one <style> allowed by its hash; and a page reads at most `limit`
// calls of the window, the most recent, pages through them (the worst
// first, `worst` a page; older calls by a cursor on endTime) and says when
// the window holds more. Synthetic stored calls (test/helpers/stored-calls.js)
// on the test server, the view in this process.

const test = require('node:test')
const assert = require('node:assert/strict')
const crypto = require('node:crypto')
const { MongoClient } = require('mongodb')
const { getTestMongo, uniqueDbName } = require('../helpers/mongo')
const { storedCall } = require('../helpers/stored-calls')
const { callAnalytics } = require('../../collectors/rtcp/quality-analytics')
const { streamSchema } = require('../../workers/storage/schemas')
const { CallsViewServer } = require('../../app/commands/calls-view')
const { recentCalls } = require('../../app/commands/calls-read')
const { TABLE } = require('../../app/commands/calls')
const MetricsServer = require('../../lib/master/metrics-server')
const { captureLogger } = require('../helpers/capture-logger')

const CALLS = 30
const LIMIT = 25
const WORST = 10

/** A streams collection holding CALLS calls ending a second apart, the last a minute ago; losses in another order than time. */
async function streamsWithCalls (t) {
  const { uri } = await getTestMongo()
  const client = await new MongoClient(uri).connect()
  t.after(() => client.close())
  const streams = client.db(uniqueDbName('calls_view_bounds')).collection('streams')
  for (const [key, options] of streamSchema.indexes()) await streams.createIndex(key, options)
  const now = Date.now()
  const docs = Array.from({ length: CALLS }, (_, n) => storedCall({ n, endTime: now - 60000 - (CALLS - n) * 1000, loss: ((n * 7) % CALLS) * 0.004 }))
  await streams.insertMany(docs)
  return { streams, docs }
}

async function startView (t, streams, options = {}) {
  const view = new CallsViewServer(streams, { host: '127.0.0.1', port: 0, since: 3600000, worst: WORST, limit: LIMIT, table: TABLE, ...options })
  const { port } = await view.start()
  t.after(() => view.stop())
  return `http://127.0.0.1:${port}`
}

async function load (url, init) {
  const res = await fetch(url, init)
  return { status: res.status, headers: res.headers, body: await res.text() }
}

// The FROM SSRC of each row, top to bottom.
function rowsOf (body) {
  return [...body.matchAll(/<tr><td[^>]*><a href="\/call\?id=[0-9a-f]{24}">(\d+) /g)].map((m) => Number(m[1]))
}

// The calls' FROM SSRCs worst first, as the view ranks them (verdict, then the most recent).
function worstFirst (docs) {
  return docs.map((doc) => ({ doc, mos: callAnalytics(doc).mos }))
    .sort((a, b) => a.mos - b.mos || b.doc.endTime - a.doc.endTime)
    .map(({ doc }) => Number(doc.from.ID))
}

// The view's search form (/sip) submits to the view itself: form-action 'self', nothing wider.
function assertSecurityHeaders (res, what, formAction = "'self'") {
  const csp = res.headers.get('content-security-policy') || ''
  for (const directive of ["default-src 'none'", "frame-ancestors 'none'", "base-uri 'none'", `form-action ${formAction}`]) {
    assert.ok(csp.split(/;\s*/).includes(directive), `${what}: CSP has ${directive}: ${csp}`)
  }
  assert.doesNotMatch(csp, /unsafe|script-src|\*/, `${what}: no script, nothing unsafe, no wildcard`)
  assert.equal(res.headers.get('x-content-type-options'), 'nosniff', what)
  assert.equal(res.headers.get('referrer-policy'), 'no-referrer', what)
  assert.equal(res.headers.get('x-frame-options'), 'DENY', what)
}

test('every response of the calls view carries the security headers, and its CSP allows the served <style> by its hash', async (t) => {
  const { streams, docs } = await streamsWithCalls(t)
  const url = await startView(t, streams)
  const responses = {
    overview: await load(`${url}/`),
    'page 2': await load(`${url}/?page=2`),
    call: await load(`${url}/call?id=${docs[0]._id}`),
    'no such call': await load(`${url}/call?id=nope`),
    'no such path': await load(`${url}/nope`),
    'bad page': await load(`${url}/?page=x`),
    'bad cursor': await load(`${url}/?before=yesterday`),
    POST: await load(`${url}/`, { method: 'POST' })
  }
  const statuses = Object.fromEntries(Object.entries(responses).map(([what, res]) => [what, res.status]))
  assert.deepEqual(statuses, { overview: 200, 'page 2': 200, call: 200, 'no such call': 404, 'no such path': 404, 'bad page': 400, 'bad cursor': 400, POST: 405 })
  for (const [what, res] of Object.entries(responses)) assertSecurityHeaders(res, what)

  for (const what of ['overview', 'call', 'no such call']) {
    const { headers, body } = responses[what]
    const styles = [...body.matchAll(/<style>([^<]*)<\/style>/g)].map((m) => m[1])
    assert.equal(styles.length, 1, `${what}: one <style>`)
    const hash = crypto.createHash('sha256').update(styles[0], 'utf8').digest('base64')
    assert.ok(headers.get('content-security-policy').split(/;\s*/).includes(`style-src 'sha256-${hash}'`), `${what}: style-src is the hash of the served style`)
    assert.doesNotMatch(body, /\sstyle="/, `${what}: no style attribute (a hash does not allow one)`)
    assert.doesNotMatch(body, /<script|\son[a-z]+=/i, `${what}: no script`)
  }
})

test('the metrics endpoint sends the same headers, with a CSP that allows nothing', async (t) => {
  const balancer = { summary: () => ({ buffer: null }), stats: async () => ({}), readiness: () => ({ ready: true }) }
  const server = new MetricsServer(balancer, { host: '127.0.0.1', port: 0, name: 'bounds' })
  const { port } = await server.start()
  t.after(() => server.stop())
  for (const path of ['/healthz', '/readyz', '/nope']) {
    const res = await load(`http://127.0.0.1:${port}${path}`)
    assertSecurityHeaders(res, path, "'none'")
    assert.doesNotMatch(res.headers.get('content-security-policy'), /style-src/, `${path}: no style either`)
  }
})

test('a route that fails with an error quoting a client\'s text logs it escaped: no raw C1 or bidi override in the log file (QA)', async (t) => {
  const { logger, records } = captureLogger()
  const route = () => { throw new Error('no call named \u202egnp.exe\u009b31m') }
  const server = new MetricsServer(null, { host: '127.0.0.1', port: 0, name: 'quoting', logger, route })
  const { port } = await server.start()
  t.after(() => server.stop())
  assert.equal((await load(`http://127.0.0.1:${port}/sip/call?id=x`)).status, 500)
  const logged = records.find((r) => r.level === 'error')
  assert.equal(logged.fields.error, 'no call named \\u202egnp.exe\\x9b31m')
  // eslint-disable-next-line no-control-regex
  for (const text of [logged.fields.error, logged.fields.path, logged.msg]) assert.doesNotMatch(text, /[\u0000-\u001f\u007f-\u009f\u202a-\u202e]/)
})

test('a page reads at most `limit` calls, the most recent of the window, says so, and pages the worst of them', async (t) => {
  const { streams, docs } = await streamsWithCalls(t)
  const url = await startView(t, streams)
  const recent = docs.slice(CALLS - LIMIT)
  const ranked = worstFirst(recent)

  const first = await load(`${url}/`)
  assert.match(first.body, new RegExp(`the ${LIMIT} most recent calls of the window`), 'a window holding more calls than a page reads says so')
  assert.deepEqual(rowsOf(first.body), ranked.slice(0, WORST), 'page 1: the worst 10 of the 25 most recent')
  assert.match(first.body, /<a id="next" href="\/\?page=2">/)
  assert.doesNotMatch(first.body, /id="prev"/)

  const second = await load(`${url}/?page=2`)
  assert.deepEqual(rowsOf(second.body), ranked.slice(WORST, 2 * WORST), 'page 2: the next 10')
  assert.match(second.body, /<a id="prev" href="\/\?page=1">/)
  const third = await load(`${url}/?page=3`)
  assert.deepEqual(rowsOf(third.body), ranked.slice(2 * WORST), 'page 3: the last 5 read')
  assert.doesNotMatch(third.body, /id="next"/, 'no page after the last call read')
  assert.deepEqual(rowsOf((await load(`${url}/?page=4`)).body), [], 'past the calls read: no rows')

  // The calls a page did not read are the next cursor's, by endTime.
  const older = /<a id="older" href="\/\?before=(\d+)">/.exec(first.body)
  assert.ok(older, 'a link to the older calls of the window')
  const rest = await load(`${url}/?before=${older[1]}`)
  assert.deepEqual(rowsOf(rest.body), worstFirst(docs.slice(0, CALLS - LIMIT)), 'the older page: the calls page 1 did not read')
  assert.doesNotMatch(rest.body, /most recent calls of the window|id="older"/, 'and nothing older')
})

test('a window holding no more calls than a page reads shows them all without a cursor', async (t) => {
  const { streams, docs } = await streamsWithCalls(t)
  const url = await startView(t, streams, { limit: CALLS, worst: CALLS })
  const { body } = await load(`${url}/`)
  assert.deepEqual(rowsOf(body), worstFirst(docs))
  assert.match(body, new RegExp(`<p id="summary">${CALLS} calls with an RTCP report in the last 1h`))
  assert.doesNotMatch(body, /most recent calls of the window|id="older"|id="next"/)
  assert.match(body, /<svg id="bands"/, 'and their calls per minute by band')
})

test('a read narrowed by what an earlier one found gives the calls the whole window gives, or reads the whole window', async (t) => {
  const { streams, docs } = await streamsWithCalls(t)
  const since = Date.now() - 3600000
  const ids = (read) => read.calls.map((c) => String(c._id))
  const whole = await recentCalls(streams, { since, limit: LIMIT })
  assert.equal(whole.calls.length, LIMIT)
  const cursor = await recentCalls(streams, { since, before: docs[CALLS - 3].endTime.getTime(), limit: LIMIT - 10 })
  assert.equal(cursor.calls.length, LIMIT - 10)
  const end = docs[CALLS - 1].endTime.getTime()
  // Right, too narrow and too wide guesses; a boundary that no longer holds a page (its calls deleted).
  const guesses = [whole, cursor, { complete: end - 1, newest: end }, { complete: since - 1000, newest: end }, { complete: end + 5000, newest: end + 6000 }]
  let finds = 0
  const counted = new Proxy(streams, { get: (target, name) => name === 'find' ? (...args) => { finds++; return target.find(...args) } : Reflect.get(target, name) })
  await recentCalls(counted, { since, limit: LIMIT, previous: whole })
  assert.equal(finds, 1, 'a boundary that still holds a page: one read, of the calls since it')
  for (const previous of guesses) {
    for (const [before, limit] of [[null, LIMIT], [docs[CALLS - 3].endTime.getTime(), LIMIT - 10]]) {
      const read = await recentCalls(streams, { since, before, limit, previous })
      const expected = before === null ? whole : cursor
      assert.deepEqual(ids(read), ids(expected), `previous ${JSON.stringify(previous.complete)}, before ${before}`)
      assert.equal(read.older, expected.older)
    }
  }
})

test('the per-minute chart of a day-long window labels its axis with the date, first and last minute apart', async (t) => {
  const { streams } = await streamsWithCalls(t)
  const url = await startView(t, streams, { since: 86400000, limit: 100 }) // every call read: the chart covers the window
  const before = Date.now()
  const { body } = await load(`${url}/`)
  const after = Date.now()
  const labels = [...body.matchAll(/<text class="axis"[^>]*>([^<]*)<\/text>/g)].map((m) => m[1])
  assert.equal(labels.length, 2, JSON.stringify(labels))
  for (const label of labels) assert.match(label, /^\d\d-\d\d \d\d:\d\d$/, 'month-day hour:minute')
  const day = (ms) => new Date(ms).toISOString().slice(5, 10)
  // The view's clock read between before and after: at midnight UTC they are two days (a CI run at 00:00 failed).
  const [first, last] = labels.map((label) => label.slice(0, 5))
  assert.ok([day(before - 86400000), day(after - 86400000)].includes(first) && [day(before), day(after)].includes(last) && first !== last, `${labels.join(' … ')}: yesterday to today`)
})
