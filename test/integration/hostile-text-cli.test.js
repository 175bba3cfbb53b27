'use strict'

// What a sender chose (RTCP SDES items, SIP Call-IDs and users) reaches the
// operator's terminal through `collector calls`. Stored hostile documents in
// the real server, read by the real CLI (a child process): no control
// character, bidi override or invisible format character may reach stdout
// raw; each shows as visible escape text, and the table stays aligned.
// --json stays JSON whose values are what was stored.

const test = require('node:test')
const assert = require('node:assert/strict')
const { MongoClient } = require('mongodb')
const { getTestMongo, uniqueDbName } = require('../helpers/mongo')
const { runCli, serveView } = require('../helpers/cli')
const { hasPassword } = require('../../lib/mongo/redact-uri')

const TITLE = '\x1b]0;pwned\x07' // sets the terminal window's title
const ERASE = '\x1b[2K' // erases the line
const FAKE = '\r FAKE LINE' // overwrites the start of the line
const CALL_ID = 'c1\x1b[1A\u202eevil\n\t@x' // cursor up, right-to-left override, a new line
const CALLER = '\x1b[31mroot\u2066' // colour, left-to-right isolate
const CALLEE = 'bob\x00\x7f\u009b2J\u2028' // NUL, DEL, C1 CSI, line separator
const HOST = 'ex\u200bample\u{e0041}' // zero-width space, a tag character

// C0 but \n (the line end), DEL, C1, the bidi embeddings, overrides and
// isolates, zero-width and other invisible format characters, line and
// paragraph separators: none may reach the terminal.
// eslint-disable-next-line no-control-regex -- naming the control characters is the point
const FORBIDDEN = /[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u00ad\u200b-\u200f\u2028-\u202e\u2060-\u2069\u3164\ufeff\u{e0000}-\u{e007f}]/u

async function hostileDatabase (t) {
  const { uri } = await getTestMongo()
  const client = await new MongoClient(uri).connect()
  const db = client.db(uniqueDbName('hostile'))
  t.after(async () => {
    await db.dropDatabase().catch(() => {})
    await client.close()
  })
  const now = Date.now()
  const side = (ID, extra) => ({ ID, IP_ADDRESS: '192.0.2.1', ...extra })
  await db.collection('streams').insertMany([
    { pairKey: 'a', active: false, endReason: 'bye', startTime: new Date(now - 60000), endTime: new Date(now), from: side(TITLE, { cname: FAKE, callId: CALL_ID }), to: side(ERASE) },
    { pairKey: 'b', active: true, startTime: new Date(now - 30000), endTime: new Date(now), from: side('\u202eplain'), to: side('ok', { cname: 'café 山田' }) }
  ])
  await db.collection('calls').insertOne({ callId: CALL_ID, caller: { user: CALLER, host: HOST }, callee: { user: CALLEE, host: 'example.org' }, final: 1200, callerTag: 't', byeFromTag: 't', invitedAt: new Date(now - 60000) })
  await db.collection('sip_messages').insertMany([
    { callId: CALL_ID, at: new Date(now - 60000), src: `192.0.2.1:5060${ERASE}`, dst: '192.0.2.2:5060', firstLine: `INVITE sip:${CALLEE}@x SIP/2.0${TITLE}`, cseq: '1 INVITE', method: 'INVITE', raw: 'INVITE' },
    { callId: CALL_ID, at: new Date(now - 59000), src: '192.0.2.2:5060', dst: '\u202e192.0.2.1:5060', firstLine: `SIP/2.0 486 ${FAKE}`, cseq: '1 INVITE', status: 486, raw: 'SIP/2.0 486' }
  ])
  return { env: { ...process.env, MONGODB_URI: uri }, where: [...(hasPassword(uri) ? [] : ['--mongo-uri', uri]), '--database', db.databaseName] }
}

// Positions that hold a space on every line: an aligned table has a run of
// at least two of them between each pair of adjacent columns.
function commonGaps (lines) {
  const chars = lines.map((line) => [...line])
  const width = Math.max(...chars.map((c) => c.length))
  const gaps = []
  let run = 0
  for (let i = 0; i <= width; i++) {
    const blank = i < width && chars.every((c) => c[i] === undefined || c[i] === ' ')
    if (blank) run++
    else if (run > 0) {
      if (run >= 2 && run < i) gaps.push(i - run)
      run = 0
    }
  }
  return gaps
}

test('collector calls prints sender-chosen text as visible escapes: no control or bidi character reaches the terminal, the table stays aligned', { timeout: 30000 }, async (t) => {
  const { env, where } = await hostileDatabase(t)
  const r = await runCli(env, 'calls', ...where, '--since', '1d')
  assert.equal(r.code, 0, r.stderr)
  const text = r.stdout
  assert.doesNotMatch(text, FORBIDDEN, `a control character reached stdout:\n${JSON.stringify(text)}`)
  for (const escaped of ['\\x1b]0;pwned\\x07', '\\x1b[2K', '\\r FAKE LINE', '\\u202eplain', 'c1\\x1b[1A\\u202eevil\\n\\t@x',
    '\\x1b[31mroot\\u2066@ex\\u200bample\\u{e0041}', 'bob\\x00\\x7f\\x9b2J\\u2028@example.org', 'café 山田']) {
    assert.ok(text.includes(escaped), `${escaped} shown as text:\n${text}`)
  }

  const lines = text.trimEnd().split('\n')
  assert.equal(lines.length, 4, `a header, one line per call and the footer:\n${text}`)
  const table = lines.slice(0, 3)
  const titles = table[0].trim().split(/\s{2,}/)
  assert.equal(titles[0], 'CALL-ID')
  // 山田 takes two columns each on a terminal: count it so.
  const onScreen = table.map((line) => line.replace(/[山田]/g, '$& '))
  assert.ok(commonGaps(onScreen).length >= titles.length - 1, `${titles.length} columns aligned on every line:\n${onScreen.join('\n')}`)
})

test('collector calls --json stays JSON with the stored values, its bidi, C1 and separator characters as \\u escapes', { timeout: 30000 }, async (t) => {
  const { env, where } = await hostileDatabase(t)
  const r = await runCli(env, 'calls', ...where, '--since', '1d', '--json')
  assert.equal(r.code, 0, r.stderr)
  const text = r.stdout
  assert.doesNotMatch(text, FORBIDDEN, `a control character reached stdout:\n${JSON.stringify(text)}`)
  const calls = text.trimEnd().split('\n').map((line) => JSON.parse(line))
  const hostile = calls.find((c) => c.callId === CALL_ID)
  assert.ok(hostile, `the hostile call's Call-ID parses back as stored:\n${text}`)
  assert.equal(hostile.from.ID, TITLE)
  assert.equal(hostile.from.cname, FAKE)
  assert.equal(hostile.to.ID, ERASE)
  assert.deepEqual(hostile.caller, { user: CALLER, host: HOST })
  assert.deepEqual(hostile.callee, { user: CALLEE, host: 'example.org' })
  assert.ok(calls.some((c) => c.from.ID === '\u202eplain'))
  assert.match(text, /\\u202e/)
})

test('collector calls --call-id prints the SIP ladder a sender wrote with its control, bidi and invisible characters as visible escapes', { timeout: 30000 }, async (t) => {
  const { env, where } = await hostileDatabase(t)
  const r = await runCli(env, 'calls', ...where, '--call-id', CALL_ID)
  assert.equal(r.code, 0, r.stderr)
  assert.doesNotMatch(r.stdout, FORBIDDEN, `a control character reached stdout:\n${JSON.stringify(r.stdout)}`)
  const ladder = r.stdout.slice(r.stdout.indexOf('SIP messages of'))
  for (const escaped of ['SIP messages of c1\\x1b[1A\\u202eevil\\n\\t@x (2 stored)', '192.0.2.1:5060\\x1b[2K', 'bob\\x00\\x7f\\x9b2J\\u2028@x SIP/2.0\\x1b]0;pwned\\x07', '\\u202e192.0.2.1:5060', 'SIP/2.0 486 \\r FAKE LINE']) {
    assert.ok(ladder.includes(escaped), `${escaped} shown as text:\n${ladder}`)
  }
  const rows = ladder.trimEnd().split('\n').filter((line) => /^\s*\+\d/.test(line))
  assert.equal(rows.length, 2, `a line per message:\n${ladder}`)
})

// The same text on the calls view's pages (`collector calls --serve`): a
// browser draws a bidi override as reversed text and hides invisible
// characters, so none reaches the page raw; each shows as its escape text.
// Line breaks and tabs are a page's whitespace (a raw message's <pre>).
// eslint-disable-next-line no-control-regex -- naming the control characters is the point
const PAGE_FORBIDDEN = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u00ad\u200b-\u200f\u2028-\u202e\u2060-\u2069\u3164\ufeff\u{e0000}-\u{e007f}]/u

test('collector calls --serve shows sender-chosen text with its bidi, invisible and control characters as visible escapes', { timeout: 30000 }, async (t) => {
  const { env, where } = await hostileDatabase(t)
  const view = await serveView(t, env, [...where, '--serve', '0', '--since', '1d'])
  const pages = {}
  for (const page of ['/', `/sip?callId=${encodeURIComponent('evil')}`, `/sip/call?id=${encodeURIComponent(CALL_ID)}`]) {
    const res = await fetch(new URL(page, view.url))
    assert.equal(res.status, 200, page)
    pages[page] = await res.text()
    assert.doesNotMatch(pages[page], PAGE_FORBIDDEN, `a bidi, invisible or control character reached ${page}`)
  }
  const call = pages[`/sip/call?id=${encodeURIComponent(CALL_ID)}`]
  for (const shown of ['c1\\x1b[1A\\u202eevil', '\\x1b[31mroot\\u2066@ex\\u200bample\\u{e0041}', '\\u202e192.0.2.1:5060']) {
    assert.ok(call.includes(shown), `${shown} shown as text on the call's page`)
  }
  assert.ok(pages['/'].includes('\\u202eplain'), 'a stream\'s SSRC on the list')
  assert.equal(await view.stop(), 0)
})
