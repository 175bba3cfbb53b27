'use strict'

// `collector calls --serve` as an operator opens it: a real RTCP collector
// stores four synthetic calls (two clean, two at 10 % loss), the CLI (a
// child process) serves the view, and headless Chromium (Debian
// `chromium`) loads it: its DOM must hold the worst calls, the per-minute
// band chart and one call's charts, and its screenshot the bands' colours.
// With a web config it asks for basic auth, as the metrics endpoint does.

const test = require('node:test')
const assert = require('node:assert/strict')
const { spawnSync } = require('node:child_process')
const fs = require('node:fs')
const http = require('node:http')
const os = require('node:os')
const path = require('node:path')
const bcrypt = require('bcryptjs')
const rtcp = require('../../collectors/rtcp')
const { startTestCollector } = require('../helpers/collector')
const { getTestMongo } = require('../helpers/mongo')
const { sendCalls } = require('../helpers/rtcp-calls')
const { serveView } = require('../helpers/cli')
const { waitFor, streamDocs } = require('../helpers/streams')
const { run } = require('../helpers/rtp-peers')
const { readPng, countColor } = require('../helpers/png')
const { removeDir } = require('../helpers/temp-dir')

const CHROMIUM_SKIP = spawnSync('chromium', ['--version']).status !== 0 && 'chromium is not installed (Debian package chromium)'
const media = (lostPerRound) => ({ lostPerRound, jitter: 160, delayMs: 20 })
const CALLS = [0, 0, 25, 25].map((lost, i) => ({ a: 0x9000 + 2 * i, b: 0x9001 + 2 * i, ab: media(lost), ba: media(lost) }))

async function chromium (t, ...args) {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'calls-view-chromium-'))
  t.after(() => removeDir(profile))
  const r = await run('chromium', ['--headless', '--no-sandbox', '--disable-gpu', '--hide-scrollbars', `--user-data-dir=${profile}`, ...args])
  assert.equal(r.code, 0, r.stderr)
  return r.stdout
}

function get (url, headers = {}) {
  return new Promise((resolve, reject) => {
    http.get(url, { headers, agent: false }, (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode))
    }).on('error', reject)
  })
}

test('collector calls --serve: the worst calls, calls by band per minute and one call per minute, as Chromium shows them', { skip: CHROMIUM_SKIP, timeout: 60000 }, async (t) => {
  const { uri } = await getTestMongo()
  const { collector, db, port } = await startTestCollector(t, rtcp, ['--stream-timeout', '30s'])
  const { sent } = await sendCalls(port, CALLS)
  await waitFor(() => collector.summary().processed === sent, { what: 'every datagram processed' })
  const env = { ...process.env, MONGODB_URI: uri }
  const view = await serveView(t, env, ['--serve', '0', '--database', db.databaseName])
  assert.match(view.url, /^http:\/\/127\.0\.0\.1:\d+\/$/, 'bound to loopback unless asked')

  const dom = await chromium(t, '--dump-dom', view.url)
  const rows = dom.match(/<tr><td/g) || []
  assert.equal(rows.length, CALLS.length, 'a row per call')
  assert.match(dom, /<table id="worst">/)
  const bars = (band) => (dom.match(new RegExp(`<rect class="${band}"`, 'g')) || []).length
  assert.ok(bars('good') >= 1 && bars('poor') >= 1, `band bars: good ${bars('good')}, poor ${bars('poor')}`)
  const shot = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'calls-view-')), 'overview.png')
  await chromium(t, `--screenshot=${shot}`, '--window-size=1100,900', view.url)
  const png = readPng(fs.readFileSync(shot))
  assert.ok(countColor(png, '#d62728') > 100, 'the poor calls\' bar is drawn')
  assert.ok(countColor(png, '#2ca02c') > 100, 'the good calls\' bar is drawn')
  // What only the <style> draws: had its CSP hash not matched, Chromium would have dropped it.
  assert.ok(countColor(png, '#dddddd') > 500, 'the table\'s row borders (the style applies under the CSP)')
  assert.ok(countColor(png, '#9e9e9e') >= 100, 'the legend\'s unknown swatch (a class of the style, not a style attribute)')

  // The worst call (first row) links to its own page.
  const worst = /<a href="\/call\?id=([0-9a-f]{24})">/.exec(dom)[1]
  const docs = await streamDocs(db)
  const lossy = docs.find((d) => String(d._id) === worst)
  assert.ok(lossy.from.quality.loss.last.lost > 0, 'the first row is a lossy call')
  const callDom = await chromium(t, '--dump-dom', `${view.url}call?id=${worst}`)
  for (const chart of ['mos', 'loss', 'jitter']) assert.match(callDom, new RegExp(`<svg id="${chart}"[^]*?<polyline class="${chart}"`), `${chart} per minute`)
  assert.equal((callDom.match(/<polyline class="mos"/g) || []).length, 2, 'one line per side')
  assert.match(callDom, /<p id="verdict">MOS \d\.\d\d \(poor; G\.107\)/)
  // Each side's clock and codec with where they came from: the SRs' 8 kHz, --codec's G.711.
  assert.match(callDom, /<p id="media">from \d+: clock 8000 Hz \(sender-reports\), codec G\.711 \(default; Ie, Bpl: ITU-T G\.113 [^;]*\); to \d+: clock 8000 Hz \(sender-reports\)/)
  const callShot = shot.replace('overview', 'call')
  await chromium(t, `--screenshot=${callShot}`, '--window-size=1100,900', `${view.url}call?id=${worst}`)
  // Both sides' points (one minute: one point each, the second over the first), left of the legends.
  assert.ok(countColor(readPng(fs.readFileSync(callShot)), '#ff7f0e', { maxX: 780 }) >= 3 * 20, 'a point per chart is drawn')
  assert.equal(await get(`${view.url}call?id=nope`), 404)
  assert.equal(await view.stop(), 0, 'Ctrl-C stops it cleanly')
  if (!process.env.KEEP_SCREENSHOTS) fs.rmSync(path.dirname(shot), { recursive: true, force: true })
})

test('collector calls --serve --web-config asks for basic auth, as the metrics endpoint does', { timeout: 30000 }, async (t) => {
  const { uri } = await getTestMongo()
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'calls-view-auth-'))
  t.after(() => removeDir(dir))
  const webConfig = path.join(dir, 'web.yml')
  fs.writeFileSync(webConfig, `basic_auth_users:\n  alice: ${bcrypt.hashSync('secret', 4)}\n`)
  const view = await serveView(t, { ...process.env, MONGODB_URI: uri }, ['--serve', '0', '--web-config', webConfig, '--database', 'calls_view_auth'])
  assert.equal(await get(view.url), 401)
  const refused = await fetch(view.url)
  assert.equal(refused.status, 401)
  assert.match(refused.headers.get('content-security-policy'), /default-src 'none'/, 'a refusal has the security headers too')
  assert.equal(refused.headers.get('x-content-type-options'), 'nosniff')
  assert.equal(refused.headers.get('x-frame-options'), 'DENY')
  assert.equal(await get(view.url, { authorization: `Basic ${Buffer.from('alice:wrong').toString('base64')}` }), 401)
  assert.equal(await get(view.url, { authorization: `Basic ${Buffer.from('alice:secret').toString('base64')}` }), 200)
  assert.equal(await view.stop(), 0)
})

test('collector calls --serve: a page that fails inside answers 500 with an id only; the reason goes to its stderr', { timeout: 30000 }, async (t) => {
  const { uri } = await getTestMongo()
  const { createWireProxy } = require('../helpers/wire-proxy')
  const failing = (name) => ['find', 'aggregate', 'count'].includes(name) ? { ok: 0, errmsg: 'internal detail db-host-7:27017 /srv/secret', code: 8000, codeName: 'AtlasError' } : undefined
  const proxy = await createWireProxy({ targetPort: Number(new URL(uri).port), answer: failing })
  t.after(() => proxy.close())
  const view = await serveView(t, { ...process.env, MONGODB_URI: proxy.uri }, ['--serve', '0', '--database', 'calls_view_500'])
  const res = await fetch(view.url)
  const body = await res.text()
  assert.equal(res.status, 500)
  const m = /^internal error ([0-9a-f]{8}): the server's log says why\n$/.exec(body)
  assert.ok(m, `the body says nothing of the cause: ${JSON.stringify(body)}`)
  assert.equal(res.headers.get('x-content-type-options'), 'nosniff', 'with the security headers')
  assert.equal(await view.stop(), 0)
  assert.match(view.stderr(), new RegExp(`^error: .*internal detail db-host-7:27017 /srv/secret.*answered 500 ${m[1]}$`, 'm'), 'the log says why, with the id the page gave')
})

// SIP as a capture agent sends it (hep-js, an independent encoder): an
// answered call whose callee and a header carry markup, and a rejected one.
function sipPackets (T0) {
  const HEPjs = require('hep-js')
  const packet = (lines, at, back) => HEPjs.encapsulate(lines.join('\r\n') + '\r\n\r\n', {
    protocolFamily: 2, protocol: 17, srcIp: back ? '10.0.0.2' : '10.0.0.1', srcPort: 5060, dstIp: back ? '10.0.0.1' : '10.0.0.2', dstPort: 5060,
    timeSeconds: Math.floor(at / 1000), timeUseconds: (at % 1000) * 1000, payloadType: 1, captureId: 7
  })
  const dialog = (callId, callee, steps) => steps.map(([line, cseq, offset, back, tagged]) => packet([line, 'Via: SIP/2.0/UDP 10.0.0.1:5060;branch=z9hG4bK1',
    'From: <sip:alice@a.example.com>;tag=a1', `To: <sip:${callee}@b.example.com>${tagged ? ';tag=b1' : ''}`, `Call-ID: ${callId}`, `CSeq: ${cseq}`,
    'X-Note: <img src=x onerror=alert(1)>', 'Content-Length: 0'], T0 + offset, back))
  const rtcp = (ssrc, peer, seq, lost, at, back) => HEPjs.encapsulate(JSON.stringify({ ssrc, type: 201, report_count: 1, report_blocks: [{ source_ssrc: peer, highest_seq_no: seq, fraction_lost: 0, ia_jitter: 80, packets_lost: lost, lsr: 0, dlsr: 0 }] }), {
    protocolFamily: 2, protocol: 17, srcIp: back ? '10.0.0.2' : '10.0.0.1', srcPort: back ? 40001 : 30001, dstIp: back ? '10.0.0.1' : '10.0.0.2', dstPort: back ? 30001 : 40001,
    timeSeconds: Math.floor(at / 1000), timeUseconds: (at % 1000) * 1000, payloadType: 5, captureId: 7, correlation_id: 'answered@view'
  })
  return [
    // The answered call's media: a report from each end, twice.
    rtcp(501, 502, 1000, 0, T0 + 3000), rtcp(502, 501, 1000, 0, T0 + 3100, true), rtcp(501, 502, 1250, 10, T0 + 8000), rtcp(502, 501, 1250, 5, T0 + 8100, true),
    ...dialog('answered@view', '%3Cscript%3Ealert(1)%3C/script%3E', [['INVITE sip:x@b.example.com SIP/2.0', '1 INVITE', 0], ['SIP/2.0 180 Ringing', '1 INVITE', 400, true, true],
      ['SIP/2.0 200 OK', '1 INVITE', 2000, true, true], ['ACK sip:x@b.example.com SIP/2.0', '1 ACK', 2010, false, true], ['BYE sip:x@b.example.com SIP/2.0', '2 BYE', 9000, false, true]]),
    ...dialog('rejected@view', '+4930555', [['INVITE sip:+4930555@b.example.com SIP/2.0', '1 INVITE', 20000], ['SIP/2.0 486 Busy Here', '1 INVITE', 20100, true, true],
      ['ACK sip:+4930555@b.example.com SIP/2.0', '1 ACK', 20110, false, true]])
  ]
}

test('collector calls --serve finds SIP calls (form, outcome filter) and draws a call\'s SIP ladder, markup escaped, its messages exported as text and pcap', { skip: CHROMIUM_SKIP, timeout: 60000 }, async (t) => {
  const hep = require('../../collectors/hep')
  const dgram = require('node:dgram')
  const { uri } = await getTestMongo()
  const { collector, db, port } = await startTestCollector(t, hep)
  const T0 = Math.floor(Date.now() / 1000) * 1000 - 600000
  const packets = sipPackets(T0)
  const socket = dgram.createSocket('udp4')
  t.after(() => socket.close())
  for (const p of packets) await new Promise((resolve, reject) => socket.send(p, port, '127.0.0.1', (err) => err ? reject(err) : resolve()))
  await waitFor(() => collector.summary().processed === packets.length, { what: 'every packet processed' })
  const view = await serveView(t, { ...process.env, MONGODB_URI: uri }, ['--serve', '0', '--since', '1d', '--database', db.databaseName])

  const overview = await chromium(t, '--dump-dom', view.url)
  assert.match(overview, /<a class="sip" href="\/sip\/call\?id=answered%40view">answered@view<\/a>/, 'the quality view links a stream to its SIP call')
  assert.match(overview, /<a id="find" href="\/sip">Find a call<\/a>: every SIP call, answered or not/, 'the root page says where the SIP calls are: it lists media')
  const search = await chromium(t, '--dump-dom', `${view.url}sip`)
  assert.match(search, /<form id="search" method="get" action="\/sip">/)
  const rows = (dom) => [...dom.matchAll(/<tr><td class="l"><a href="\/sip\/call\?id=([^"]+)">/g)].map((m) => decodeURIComponent(m[1]))
  assert.deepEqual(rows(search).sort(), ['answered@view', 'rejected@view'], 'every SIP call, without media')
  assert.match(search, /486 failed/)
  assert.doesNotMatch(search, /<script/i, 'the callee\'s markup is text')
  assert.match(search, /&lt;script&gt;alert\(1\)&lt;\/script&gt;@b\.example\.com/)
  assert.deepEqual(rows(await chromium(t, '--dump-dom', `${view.url}sip?outcome=failed&order=time`)), ['rejected@view'], 'the outcome filter')
  assert.equal(await get(`${view.url}sip?outcome=bogus`), 400)

  const page = `${view.url}sip/call?id=${encodeURIComponent('answered@view')}`
  const call = await chromium(t, '--dump-dom', page)
  assert.equal((call.match(/<g class="message">/g) || []).length, 5, 'an arrow per message')
  assert.equal((call.match(/<text class="end"/g) || []).length, 2, 'a column per address:port')
  assert.deepEqual([...call.matchAll(/<a href="#m(\d+)">/g)].map((m) => Number(m[1])), [1, 2, 3, 4, 5], 'each arrow links to its message, in capture order')
  assert.equal((call.match(/<pre>/g) || []).length, 5)
  assert.doesNotMatch(call, /<img|<script/i, 'a sender\'s markup stays text')
  assert.match(call, /<p id="verdict-1">MOS /, 'its media\'s verdict')
  assert.match(call, /<svg id="loss-1"[^]*?<polyline class="loss-1"/, 'and its loss per minute, a line per direction')
  assert.equal((call.match(/<polyline class="loss-1"/g) || []).length, 2)
  const shot = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'calls-view-sip-')), 'ladder.png')
  t.after(() => process.env.KEEP_SCREENSHOTS ? t.diagnostic(shot) : fs.rmSync(path.dirname(shot), { recursive: true, force: true }))
  await chromium(t, `--screenshot=${shot}`, '--window-size=1100,1400', page)
  const png = readPng(fs.readFileSync(shot))
  assert.ok(countColor(png, '#1f77b4') > 3 * 50, 'the requests\' arrows are drawn')
  assert.ok(countColor(png, '#2ca02c') > 2 * 50, 'the 2xx and 18x arrows are drawn')

  const text = await (await fetch(`${view.url}sip/call.txt?id=answered%40view`)).text()
  for (const line of ['INVITE sip:x@b.example.com SIP/2.0', 'SIP/2.0 180 Ringing', 'SIP/2.0 200 OK', 'ACK sip:x@b.example.com SIP/2.0', 'BYE sip:x@b.example.com SIP/2.0']) assert.ok(text.includes(line), line)
  const pcap = path.join(path.dirname(shot), 'call.pcap')
  fs.writeFileSync(pcap, Buffer.from(await (await fetch(`${view.url}sip/call.pcap?id=answered%40view`)).arrayBuffer()))
  const read = await run('tshark', ['-r', pcap, '-Y', 'sip', '-T', 'fields', '-e', 'frame.time_epoch', '-e', 'ip.src', '-e', 'sip.Call-ID', '-e', 'sip.CSeq'])
  const frames = read.stdout.trim().split('\n').map((line) => line.split('\t'))
  assert.deepEqual(frames.map((f) => [Math.round(Number(f[0]) * 1000) - T0, f[1], f[2], f[3]]), [
    [0, '10.0.0.1', 'answered@view', '1 INVITE'], [400, '10.0.0.2', 'answered@view', '1 INVITE'], [2000, '10.0.0.2', 'answered@view', '1 INVITE'],
    [2010, '10.0.0.1', 'answered@view', '1 ACK'], [9000, '10.0.0.1', 'answered@view', '2 BYE']
  ], 'tshark reads the exported call: capture times, addresses, messages')
  // sngrep opens it too: replayed as HEP, one packet per message.
  const listener = dgram.createSocket('udp4')
  t.after(() => listener.close())
  const heard = []
  listener.on('message', (msg) => heard.push(msg))
  await new Promise((resolve) => listener.bind(0, '127.0.0.1', resolve))
  const sngrep = await run('sngrep', ['-N', '-q', '-I', pcap, '-H', `udp:127.0.0.1:${listener.address().port}`])
  assert.equal(sngrep.code, 0, sngrep.stderr)
  await waitFor(() => heard.length === 5, { what: 'sngrep\'s five HEP packets' })
  assert.ok(heard.every((msg) => msg.subarray(0, 4).toString() === 'HEP3'))
  assert.equal(await get(`${view.url}sip/call?id=nope`), 404)
  assert.equal(await view.stop(), 0)
})
